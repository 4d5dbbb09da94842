// The one table of the engine's parameter ranges (transport/engine_limits.h):
// every bound it names is what EngineConfig::validate() takes, one step
// outside is refused with the table's words. lumen-dp's options parse into
// the same table (tests/dpdk/lumen_dp_test.sh checks the command line).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "transport/engine.h"
#include "transport/engine_limits.h"

using namespace lumen::dp;

namespace
{

struct Case {
	ParamRange range;
	// puts v (in the configuration's unit) where the range applies, and
	// whatever other fields a valid configuration then needs
	std::function<void(EngineConfig &, uint64_t)> set;
	const char *says = nullptr; // what the refusal names, when not the option (a CcParams field)
};

EngineConfig base()
{
	EngineConfig c;
	c.ip = 0x0a000001;
	c.cc.mss = c.max_payload();
	return c;
}

std::vector<Case> cases()
{
	namespace L = limits;
	return {
		{L::kMtu,
		 [](EngineConfig &c, uint64_t v) {
			 c.mtu = (uint32_t)v;
			 c.cc.mss = c.max_payload();
		 }},
		{L::kIntSlots,
		 [](EngineConfig &c, uint64_t v) {
			 c.int_slots = (uint32_t)v;
			 c.cc.mss = c.max_payload();
		 }},
		{L::kWindow, [](EngineConfig &c, uint64_t v) { c.rx_window = c.tx_window = (uint32_t)v; }},
		{L::kAckEvery, [](EngineConfig &c, uint64_t v) { c.ack_every = (uint32_t)v; }},
		{L::kEntropies,
		 [](EngineConfig &c, uint64_t v) {
			 c.sport_base = 0; /* all 65536 ports may be entropies */
			 c.path.entropies = (uint32_t)v;
		 }},
		{L::kExplore, [](EngineConfig &c, uint64_t v) { c.path.explore_pkts = (uint32_t)v; }},
		{L::kFreezeUs, [](EngineConfig &c, uint64_t v) { c.path.freeze_ns = v; }},
		{L::kCeNackThreshold,
		 [](EngineConfig &c, uint64_t v) {
			 c.path_mode = LUMEN_PATH_ECMP;
			 c.gbn = true;
			 c.ce_nack_threshold_pct = (uint32_t)v;
		 }},
		{L::kCeWindowUs, [](EngineConfig &c, uint64_t v) { c.ce_window_ns = v; }},
		{L::kStartJitterUs, [](EngineConfig &c, uint64_t v) { c.start_jitter_ns = v; }},
		{L::kRtoMinUs,
		 [](EngineConfig &c, uint64_t v) {
			 c.rto.min_ns = c.rto.initial_ns = v;
			 c.rto.max_ns = std::max(c.rto.max_ns, v);
		 }},
		{L::kRtoMaxUs,
		 [](EngineConfig &c, uint64_t v) {
			 c.rto.max_ns = v;
			 /* the floor follows, but stays within its own range */
			 c.rto.min_ns = c.rto.initial_ns =
				 std::max<uint64_t>(1000, std::min<uint64_t>(c.rto.min_ns, v));
			 c.rto.granularity_ns = std::min<uint64_t>(c.rto.granularity_ns, v);
		 }},
		{L::kMaxConns, [](EngineConfig &c, uint64_t v) { c.max_conns = (uint32_t)v; }},
		{L::kInitCwnd, [](EngineConfig &c, uint64_t v) { c.cc.init_cwnd_pkts = (uint32_t)v; },
		 "init_cwnd_pkts"},
		/* congestion control: the cores' checks, in the cores' words */
		{L::kHpccEta,
		 [](EngineConfig &c, uint64_t v) {
			 c.cc.algorithm = CcAlgorithm::kHpcc;
			 c.cc.hpcc_eta = (uint32_t)v;
		 },
		 "hpcc eta"},
		{L::kHpccMaxStage,
		 [](EngineConfig &c, uint64_t v) {
			 c.cc.algorithm = CcAlgorithm::kHpcc;
			 c.cc.hpcc_max_stage = (uint32_t)v;
		 },
		 "hpcc max_stage"},
		{L::kHpccWai,
		 [](EngineConfig &c, uint64_t v) {
			 c.cc.algorithm = CcAlgorithm::kHpcc;
			 c.cc.hpcc_wai_bytes = (uint32_t)v;
		 },
		 "hpcc W_AI"},
		/* T_low's ceiling is T_high's: a T_low past it leaves no T_high */
		{L::kTimelyTLowUs,
		 [](EngineConfig &c, uint64_t v) {
			 c.cc.algorithm = CcAlgorithm::kTimely;
			 c.cc.timely_t_low_ns = v;
			 c.cc.timely_t_high_ns = std::max<uint64_t>(c.cc.timely_t_high_ns, v + 1000);
		 },
		 "timely T_"},
		{L::kTimelyTHighUs,
		 [](EngineConfig &c, uint64_t v) {
			 c.cc.algorithm = CcAlgorithm::kTimely;
			 c.cc.timely_t_high_ns = v;
			 /* the lowest T_low, unless T_high is below it */
			 c.cc.timely_t_low_ns = v >= 2000 ? 1000 : v;
		 },
		 "timely T_high"},
		{L::kTimelyMinRttUs,
		 [](EngineConfig &c, uint64_t v) {
			 c.cc.algorithm = CcAlgorithm::kTimely;
			 c.cc.timely_min_rtt_ns = v;
		 },
		 "timely min_rtt"},
		{L::kTimelyDeltaMbps,
		 [](EngineConfig &c, uint64_t v) {
			 c.cc.algorithm = CcAlgorithm::kTimely;
			 c.cc.host_bw_bps = 1600000000000ull; /* delta is at most the host's bandwidth */
			 c.cc.timely_delta_mbps = (uint32_t)v;
		 },
		 "timely delta"},
		{L::kTimelyAlpha,
		 [](EngineConfig &c, uint64_t v) {
			 c.cc.algorithm = CcAlgorithm::kTimely;
			 c.cc.timely_alpha = (uint32_t)v;
		 },
		 "timely alpha"},
		{L::kTimelyBeta,
		 [](EngineConfig &c, uint64_t v) {
			 c.cc.algorithm = CcAlgorithm::kTimely;
			 c.cc.timely_beta = (uint32_t)v;
		 },
		 "timely beta"},
		{L::kTimelyHai,
		 [](EngineConfig &c, uint64_t v) {
			 c.cc.algorithm = CcAlgorithm::kTimely;
			 c.cc.timely_hai_events = (uint32_t)v;
		 },
		 "timely HAI"},
		{L::kTimelySegment,
		 [](EngineConfig &c, uint64_t v) {
			 c.cc.algorithm = CcAlgorithm::kTimely;
			 c.cc.timely_seg_bytes = (uint32_t)v;
		 },
		 "timely segment"},
		{L::kRetcpJump,
		 [](EngineConfig &c, uint64_t v) {
			 c.cc.algorithm = CcAlgorithm::kRetcp;
			 c.cc.retcp_jump = (uint32_t)v;
		 },
		 "retcp jump"},
		{L::kRetcpPrebufferUs,
		 [](EngineConfig &c, uint64_t v) {
			 c.cc.algorithm = CcAlgorithm::kRetcp;
			 c.cc.retcp_prebuffer_ns = v;
		 },
		 "retcp prebuffer"},
	};
}

} // namespace

TEST(DpEngineLimits, EveryBoundOfTheTableIsTakenAndOneStepOutsideIsRefused)
{
	ASSERT_EQ(base().validate(), "");
	for (const Case &k : cases()) {
		const ParamRange &r = k.range;
		const char *says = k.says ? k.says : r.name;
		SCOPED_TRACE(r.name);
		for (uint64_t v : {r.lo, r.hi}) {
			EngineConfig c = base();
			k.set(c, v * r.scale);
			EXPECT_EQ(c.validate(), "") << "value " << v;
		}
		if (r.lo > 0) {
			EngineConfig c = base();
			k.set(c, r.lo * r.scale - 1);
			EXPECT_NE(c.validate().find(says), std::string::npos) << c.validate();
		}
		EngineConfig c = base();
		k.set(c, r.hi * r.scale + 1);
		EXPECT_NE(c.validate().find(says), std::string::npos) << c.validate();
	}
}

TEST(DpEngineLimits, EntropiesPastThePortRangeAreRefusedWithTheLimitForTheBase)
{
	EngineConfig c = base(); /* sport base 49152, as lumen-dp runs */
	c.path.entropies = 65536 - c.sport_base;
	EXPECT_EQ(c.validate(), "");
	c.path.entropies++;
	EXPECT_NE(c.validate().find("at most 16384 entropies"), std::string::npos) << c.validate();
}

TEST(DpEngineLimits, ARangeHoldsItsBoundsInTheConfigurationsUnit)
{
	constexpr ParamRange us{"x-us", 2, 5, 1000};
	EXPECT_FALSE(us.holds(1999));
	EXPECT_TRUE(us.holds(2000));
	EXPECT_TRUE(us.holds(2500)); /* a configuration may say nanoseconds */
	EXPECT_TRUE(us.holds(5000));
	EXPECT_FALSE(us.holds(5001));
	EXPECT_EQ(us.refusal(), "x-us must be 2..5");
}

TEST(DpEngineLimits, FractionsAreSaidAsTyped)
{
	EXPECT_EQ(limits::fraction_text(limits::kHpccEta), "0.5..1");
	EXPECT_EQ(limits::fraction_text(limits::kTimelyAlpha), "(0, 1]");
	EXPECT_EQ(limits::fraction_text(limits::kTimelyBeta), "(0, 1]");
}

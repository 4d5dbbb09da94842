// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/bpfctl/cc.h for the baselines, bpf_hpcc and bpf_timely, without
// a kernel: their parameter keys (whose each key is, what `beta` means), the
// refusals with the cores' own messages (lumen_hpcc_param_strerror,
// lumen_timely_param_strerror), the counter table, the pin and struct_ops
// map names against the BPF objects, and the flow records. Loading runs in
// tests/e2e/cc_test.sh.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "base/error.h"
#include "bpfctl/cc.h"
#include "bpfctl/cc_flows.h"

#include "cc_flows.skel.h"
#include "powertcp.skel.h"
#include "timely.skel.h"

using namespace lumen;

namespace
{

constexpr unsigned kInt = 1u << LUMEN_PTCP_MODE_INT;
constexpr unsigned kTheta = 1u << LUMEN_PTCP_MODE_THETA;
constexpr unsigned kHpcc = 1u << LUMEN_PTCP_MODE_HPCC;

// The message of the UsageError `f` throws; "" (and a failure) if none.
template <typename F> std::string refusal(F f)
{
	try {
		f();
	} catch (const UsageError &e) {
		return e.what();
	}
	ADD_FAILURE() << "not refused";
	return "";
}

// The defaults with `words` applied to `algos`, as load and set compute them.
CcParamSets sets_with(const std::vector<std::string> &words, unsigned algos = kCcAllAlgos)
{
	return cc_param_sets(cc_default_param_sets(), algos, parse_cc_params(words, algos));
}

} // namespace

TEST(CcBaselines, AlgorithmsAndMask)
{
	ASSERT_EQ(kCcAlgoCount, 4u);
	EXPECT_STREQ(kCcAlgos[LUMEN_PTCP_MODE_HPCC].name, LUMEN_CC_NAME_HPCC);
	EXPECT_EQ(kCcAlgos[LUMEN_PTCP_MODE_HPCC].mode, LUMEN_PTCP_MODE_HPCC);
	EXPECT_STREQ(kCcAlgos[kCcTimely].name, LUMEN_CC_NAME_TIMELY);
	EXPECT_EQ(parse_cc_algo_mask(LUMEN_CC_NAME_HPCC), kHpcc);
	EXPECT_EQ(parse_cc_algo_mask(LUMEN_CC_NAME_TIMELY), kCcTimelyBit);
	EXPECT_EQ(parse_cc_algo_mask("all"), kCcAllAlgos);
	EXPECT_EQ(parse_cc_algo_mask("both"), kCcAllAlgos); // the old word
	EXPECT_NE(refusal([] { parse_cc_algo_mask("bpf_dctcp"); }).find(LUMEN_CC_NAME_TIMELY), std::string::npos);
}

TEST(CcBaselines, ParsesHpccKeys)
{
	CcParamChange c = parse_cc_params({"eta=0.9", "max-stage=3", "wai=8k"});
	EXPECT_EQ(c.algos(), kHpcc);
	CcParamSets s = sets_with({"eta=0.9", "max-stage=3", "wai=8k"});
	EXPECT_EQ(s.ptcp[LUMEN_PTCP_MODE_HPCC].hpcc.eta, 58982u);
	EXPECT_EQ(s.ptcp[LUMEN_PTCP_MODE_HPCC].hpcc.max_stage, 3u);
	EXPECT_EQ(s.ptcp[LUMEN_PTCP_MODE_HPCC].hpcc.wai_bytes, 8192u);
	// HPCC's keys are bpf_hpcc's alone: PowerTCP's copy keeps the defaults
	EXPECT_EQ(s.ptcp[LUMEN_PTCP_MODE_INT].hpcc.eta, unsigned{LUMEN_HPCC_DEFAULT_ETA});
	EXPECT_EQ(sets_with({"wai=auto"}).ptcp[LUMEN_PTCP_MODE_HPCC].hpcc.wai_bytes, 0u);
	// the PowerTCP core's keys reach HPCC too
	EXPECT_EQ(sets_with({"gamma=0.5"}).ptcp[LUMEN_PTCP_MODE_HPCC].gamma, 32768u);
}

TEST(CcBaselines, ParsesTimelyKeys)
{
	CcParamSets s = sets_with({"t-low=30us", "t-high=300us", "min-rtt=20us", "delta=100mbit", "alpha=0.5",
				   "beta=0.25", "hai-events=3", "segment=64k", "host-bw=25gbit"},
				  kCcTimelyBit);
	const lumen_timely_params &t = s.timely;
	EXPECT_EQ(t.t_low_ns, 30000u);
	EXPECT_EQ(t.t_high_ns, 300000u);
	EXPECT_EQ(t.min_rtt_ns, 20000u);
	EXPECT_EQ(t.delta_mbps, 100u);
	EXPECT_EQ(t.alpha, 32768u);
	EXPECT_EQ(t.beta, 16384u);
	EXPECT_EQ(t.hai_events, 3u);
	EXPECT_EQ(t.seg_bytes, 65536u);
	EXPECT_EQ(t.host_bw_mbps, 25000u);
	// --algo bpf_timely: nothing of the others changed
	lumen_ptcp_params d;
	lumen_ptcp_params_default(&d);
	EXPECT_EQ(s.ptcp[LUMEN_PTCP_MODE_INT].host_bw_mbps, d.host_bw_mbps);
	CcParamSets a = sets_with({"min-rtt=auto", "delta=auto"}, kCcTimelyBit);
	EXPECT_EQ(a.timely.min_rtt_ns, 0u);
	EXPECT_EQ(a.timely.delta_mbps, 0u);
}

TEST(CcBaselines, KeysGoToTheAlgorithmsThatHaveThem)
{
	// without --algo: each key to every algorithm that has it
	CcParamSets s = sets_with({"host-bw=40gbit", "eta=0.9", "t-low=20us", "gamma=0.5"});
	for (unsigned i = 0; i < kCcPtcpAlgoCount; i++) {
		EXPECT_EQ(s.ptcp[i].host_bw_mbps, 40000u) << kCcAlgos[i].name;
		EXPECT_EQ(s.ptcp[i].gamma, 32768u) << kCcAlgos[i].name;
	}
	EXPECT_EQ(s.timely.host_bw_mbps, 40000u);
	EXPECT_EQ(s.timely.t_low_ns, 20000u);
	EXPECT_EQ(s.ptcp[LUMEN_PTCP_MODE_HPCC].hpcc.eta, 58982u);
	EXPECT_EQ(parse_cc_params({"host-bw=1gbit"}).algos(), kCcAllAlgos);
	EXPECT_EQ(parse_cc_params({"gamma=0.5"}).algos(), kCcPtcpAlgos);
	EXPECT_EQ(parse_cc_params({"segment=32k"}).algos(), kCcTimelyBit);

	// a key none of the chosen algorithms has is refused, naming whose it is
	std::string m = refusal([] { parse_cc_params({"eta=0.9"}, kTheta); });
	EXPECT_NE(m.find(LUMEN_CC_NAME_HPCC), std::string::npos) << m;
	EXPECT_THROW(parse_cc_params({"eta=0.9"}, kInt), UsageError);
	EXPECT_THROW(parse_cc_params({"gamma=0.5"}, kCcTimelyBit), UsageError);
	EXPECT_THROW(parse_cc_params({"base-rtt=20us"}, kCcTimelyBit), UsageError);
	EXPECT_THROW(parse_cc_params({"t-low=20us"}, kHpcc), UsageError);
	EXPECT_THROW(parse_cc_params({"alpha=0.5"}, kInt), UsageError);
	EXPECT_NO_THROW(parse_cc_params({"host-bw=1gbit"}, kCcTimelyBit));
	EXPECT_NO_THROW(parse_cc_params({"max-stage=2"}, kHpcc));
}

TEST(CcBaselines, BetaIsTimelysOnlyWithItsAlgo)
{
	// PowerTCP's beta (bytes) unless --algo bpf_timely alone
	CcParamChange p = parse_cc_params({"beta=64k"});
	ASSERT_TRUE(p.beta.has_value());
	EXPECT_FALSE(p.timely_beta.has_value());
	EXPECT_EQ(p.algos(), kCcPtcpAlgos);
	CcParamChange t = parse_cc_params({"beta=0.5"}, kCcTimelyBit);
	ASSERT_TRUE(t.timely_beta.has_value());
	EXPECT_EQ(*t.timely_beta, 32768u);
	EXPECT_FALSE(t.beta.has_value());
	EXPECT_THROW(parse_cc_params({"beta=0.5"}), UsageError); // not whole bytes
	EXPECT_THROW(parse_cc_params({"beta=64k"}, kCcTimelyBit), UsageError); // not a fraction
}

TEST(CcBaselines, MalformedValuesAndWords)
{
	EXPECT_THROW(parse_cc_params({"eta=high"}), UsageError);
	EXPECT_THROW(parse_cc_params({"max-stage=-1"}), UsageError);
	EXPECT_THROW(parse_cc_params({"t-low=20"}), UsageError); // a duration needs its unit
	EXPECT_THROW(parse_cc_params({"delta=fast"}), UsageError);
	EXPECT_THROW(parse_cc_params({"segment=lots"}), UsageError);
	EXPECT_THROW(parse_cc_params({"t-low=20us", "t-low=30us"}), UsageError);
	EXPECT_THROW(parse_cc_params({"hai=5"}), UsageError); // hai-events
	std::string m = refusal([] { parse_cc_params({"speed=1"}); });
	EXPECT_NE(m.find("t-high"), std::string::npos) << m; // the list names every key
	EXPECT_NE(m.find("max-stage"), std::string::npos) << m;
}

// Out-of-range values reach the cores' validation: refused with their
// messages, for the algorithm they belong to.
TEST(CcBaselines, RangesAreTheCoresWithTheirMessages)
{
	struct Case {
		std::vector<std::string> words;
		unsigned algos;
		const char *algo;
		std::string core_message;
	};
	const Case cases[] = {
		{{"eta=0.3"}, kCcAllAlgos, LUMEN_CC_NAME_HPCC, lumen_hpcc_param_strerror(LUMEN_HPCC_PARAM_EETA)},
		{{"eta=1.5"}, kHpcc, LUMEN_CC_NAME_HPCC, lumen_hpcc_param_strerror(LUMEN_HPCC_PARAM_EETA)},
		{{"max-stage=101"}, kHpcc, LUMEN_CC_NAME_HPCC, lumen_hpcc_param_strerror(LUMEN_HPCC_PARAM_ESTAGE)},
		{{"wai=2g"}, kHpcc, LUMEN_CC_NAME_HPCC, lumen_hpcc_param_strerror(LUMEN_HPCC_PARAM_EWAI)},
		{{"t-low=500ns"},
		 kCcAllAlgos,
		 LUMEN_CC_NAME_TIMELY,
		 lumen_timely_param_strerror(LUMEN_TIMELY_PARAM_ETLOW)},
		{{"t-high=40us"},
		 kCcTimelyBit,
		 LUMEN_CC_NAME_TIMELY,
		 lumen_timely_param_strerror(LUMEN_TIMELY_PARAM_ETHIGH)},
		{{"t-low=2s"},
		 kCcTimelyBit,
		 LUMEN_CC_NAME_TIMELY,
		 lumen_timely_param_strerror(LUMEN_TIMELY_PARAM_ETLOW)},
		{{"min-rtt=2s"},
		 kCcTimelyBit,
		 LUMEN_CC_NAME_TIMELY,
		 lumen_timely_param_strerror(LUMEN_TIMELY_PARAM_EMINRTT)},
		{{"delta=20gbit"},
		 kCcTimelyBit,
		 LUMEN_CC_NAME_TIMELY,
		 lumen_timely_param_strerror(LUMEN_TIMELY_PARAM_EDELTA)},
		{{"alpha=0"},
		 kCcTimelyBit,
		 LUMEN_CC_NAME_TIMELY,
		 lumen_timely_param_strerror(LUMEN_TIMELY_PARAM_EALPHA)},
		{{"beta=1.5"},
		 kCcTimelyBit,
		 LUMEN_CC_NAME_TIMELY,
		 lumen_timely_param_strerror(LUMEN_TIMELY_PARAM_EBETA)},
		{{"hai-events=0"},
		 kCcTimelyBit,
		 LUMEN_CC_NAME_TIMELY,
		 lumen_timely_param_strerror(LUMEN_TIMELY_PARAM_EHAI)},
		{{"segment=512"},
		 kCcTimelyBit,
		 LUMEN_CC_NAME_TIMELY,
		 lumen_timely_param_strerror(LUMEN_TIMELY_PARAM_ESEG)},
		// a valid value that makes another invalid: delta within the old host-bw, not the new
		{{"delta=5gbit", "host-bw=1gbit"},
		 kCcTimelyBit,
		 LUMEN_CC_NAME_TIMELY,
		 lumen_timely_param_strerror(LUMEN_TIMELY_PARAM_EDELTA)},
	};
	for (const auto &c : cases) {
		std::string m = refusal([&] { sets_with(c.words, c.algos); });
		EXPECT_NE(m.find(std::string("invalid parameters for ") + c.algo + ": " + c.core_message),
			  std::string::npos)
			<< c.words[0] << ": " << m;
	}
	// the edges are accepted
	EXPECT_NO_THROW(sets_with({"eta=0.5", "max-stage=100", "wai=1g"}, kHpcc));
	EXPECT_NO_THROW(sets_with({"eta=1", "max-stage=0"}, kHpcc));
	EXPECT_NO_THROW(sets_with({"t-low=1us", "t-high=1s", "alpha=1", "beta=1", "hai-events=1000", "segment=16m"},
				  kCcTimelyBit));
	EXPECT_NO_THROW(sets_with({"segment=1k", "delta=10gbit"}, kCcTimelyBit));
}

TEST(CcBaselines, TimelyCountersNamedOnce)
{
	std::set<std::string> names;
	for (const auto &c : kTimelyCounters) {
		ASSERT_NE(c.name, nullptr);
		EXPECT_GT(std::strlen(c.help), 0u);
		names.insert(c.name);
	}
	EXPECT_EQ(names.size(), std::size_t{LUMEN_TIMELY_CNT_MAX});
	EXPECT_STREQ(kTimelyCounters[LUMEN_TIMELY_CNT_HAI].name, "hai");
	// the help of counters HPCC bumps too names it
	EXPECT_NE(std::strstr(kCcCounters[LUMEN_CC_CNT_FALLBACK_UPDATES].help, LUMEN_CC_NAME_HPCC), nullptr);
	EXPECT_NE(std::strstr(kCcCounters[LUMEN_CC_CNT_NO_INT].help, LUMEN_CC_NAME_HPCC), nullptr);
}

// libbpf pins a map under its name, and unload scans struct_ops maps by
// theirs: both must be the names in the .bpf.c files.
TEST(CcBaselines, PinAndMapNamesMatchTheBpfObjects)
{
	powertcp *cc = powertcp__open();
	ASSERT_NE(cc, nullptr);
	EXPECT_STREQ(bpf_map__name(cc->maps.ptcp_ops_hpcc), kCcAlgos[LUMEN_PTCP_MODE_HPCC].map_name);
	EXPECT_EQ(bpf_map__max_entries(cc->maps.lumen_cc_params), unsigned{LUMEN_CC_PARAM_ENTRIES});

	timely *t = timely__open();
	ASSERT_NE(t, nullptr);
	EXPECT_STREQ(bpf_map__name(t->maps.timely_ops), kCcAlgos[kCcTimely].map_name);
	EXPECT_STREQ(bpf_map__name(t->maps.lumen_timely_params), LUMEN_PIN_TIMELY_PARAMS);
	EXPECT_STREQ(bpf_map__name(t->maps.lumen_timely_stats), LUMEN_PIN_TIMELY_STATS);
	EXPECT_STREQ(bpf_map__name(t->maps.lumen_timely_sk), LUMEN_PIN_TIMELY_SK);
	EXPECT_STREQ(bpf_map__name(t->maps.lumen_cc_faults), LUMEN_PIN_CC_FAULTS);
	// one lumen_cc_faults for both objects: the same definition
	EXPECT_EQ(bpf_map__value_size(t->maps.lumen_cc_faults), bpf_map__value_size(cc->maps.lumen_cc_faults));
	EXPECT_EQ(bpf_map__max_entries(t->maps.lumen_cc_faults), bpf_map__max_entries(cc->maps.lumen_cc_faults));
	EXPECT_EQ(bpf_map__max_entries(t->maps.lumen_timely_stats), unsigned{LUMEN_TIMELY_CNT_MAX});

	::cc_flows *fl = cc_flows__open();
	ASSERT_NE(fl, nullptr);
	EXPECT_STREQ(bpf_map__name(fl->maps.lumen_timely_sk), LUMEN_PIN_TIMELY_SK);
	EXPECT_EQ(bpf_map__value_size(fl->maps.lumen_timely_sk), bpf_map__value_size(t->maps.lumen_timely_sk));
	cc_flows__destroy(fl);
	timely__destroy(t);
	powertcp__destroy(cc);
}

TEST(CcBaselines, FlowRecordsNameTheirAlgorithm)
{
	lumen_cc_flow raw{};
	raw.family = 2; // AF_INET
	raw.mode = LUMEN_PTCP_MODE_HPCC;
	CcFlow h = cc_flow_from(raw);
	EXPECT_EQ(h.algo, LUMEN_CC_NAME_HPCC);
	EXPECT_FALSE(h.timely);

	lumen_timely_flow tr{};
	tr.family = 2;
	const unsigned char a[4] = {10, 231, 0, 1}, b[4] = {10, 231, 0, 2};
	std::memcpy(tr.saddr, a, 4);
	std::memcpy(tr.daddr, b, 4);
	tr.sport = 40000;
	tr.dport = 5201;
	tr.netns_ino = 4026531840u;
	tr.rate = 125000000;
	tr.stats.events = 7;
	CcFlow t = cc_flow_from(tr);
	EXPECT_TRUE(t.timely);
	EXPECT_EQ(t.algo, LUMEN_CC_NAME_TIMELY);
	EXPECT_EQ(t.local, "10.231.0.1:40000");
	EXPECT_EQ(t.remote, "10.231.0.2:5201");
	EXPECT_EQ(t.netns_ino, 4026531840u);
	EXPECT_EQ(t.traw.stats.events, 7u);
}

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// The PowerTCP core fed with version 2 INT (lumen/int_option.h, "Version 2:
// wide records and partial echoes"): echoes up to ~126 ms apart are usable
// where version 1 calls them a gap; the limit, and the 24-bit timestamp and
// byte counter wrapping inside it; partial echoes (the bottleneck hop alone,
// when SACK blocks leave no room for the whole echo) sample and update only
// their hop and are not path changes; path and version changes re-baseline;
// max_hop names a path index; hand-built echoes whose first hop, path hops
// and count disagree give no sample; and the liveness property (see
// tests/ptcp_stream.h) still holds when a lying path's echoes may now be
// used across long RTTs.
//
// Every echo is built the way the shells see one: a request written with
// lumen_int_write_request_v, stamped by each switch with lumen_int_push_hop,
// parsed by the receiver, echoed with lumen_int_write_echo_range or
// lumen_int_write_echo_fit, parsed again by the sender.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

extern "C" {
#include "lumen/powertcp.h"
#include "lumen/powertcp_ack.h"
#include "ptcp_stream.h"
}

namespace
{

constexpr uint32_t kMss = 1448;
constexpr uint64_t kUs = 1000, kMs = 1000000;
constexpr uint64_t kTau = 20 * kUs;

lumen_ptcp_params params_10g_20us()
{
	lumen_ptcp_params p;
	lumen_ptcp_params_default(&p);
	p.host_bw_mbps = 10000; // host BDP 25000 bytes at tau 20 us
	p.base_rtt_ns = kTau;
	p.expected_flows = 10;
	EXPECT_EQ(lumen_ptcp_params_validate(&p), 0);
	return p;
}

// A flow whose ACKs carry no RTT sample (rtt_ns 0): every window update is
// then an INT update, and each counter moves for INT reasons alone.
ptcp_stream int_only_flow()
{
	lumen_ptcp_params p = params_10g_20us();
	ptcp_stream s;
	ptcp_stream_init(&s, &p, 0, kMss, 1000);
	return s;
}

// One egress port on the path: a switch with its own clock and byte counter.
struct Port {
	uint32_t rate_mbps;
	double util; // share of its line rate the port sends
	uint64_t qlen_bytes;
	uint64_t clock_ns = 0; // the switch's clock, its own epoch
	uint64_t tx_bytes = 0; // bytes sent since the switch started
};

struct Path {
	uint32_t version;
	std::vector<Port> ports;

	Path(uint32_t ver, std::vector<Port> p) : version(ver), ports(std::move(p))
	{
		// unrelated epochs (multiples of 16 ns and of every byte unit)
		for (size_t i = 0; i < ports.size(); i++) {
			ports[i].clock_ns = (i + 1) * 1000 * kUs;
			ports[i].tx_bytes = i * (1u << 20);
		}
	}

	// dt_ns passes on the switches' clocks as on the host's
	void advance(uint64_t dt_ns)
	{
		for (auto &p : ports) {
			p.clock_ns += dt_ns;
			p.tx_bytes += uint64_t(p.util * double(p.rate_mbps) * double(dt_ns) / 8000.0);
		}
	}

	// The request of a data segment sent now, as the receiver parses it
	// after every switch on the path stamped it.
	lumen_int_opt request() const
	{
		uint8_t buf[LUMEN_INT_MAX_LEN] = {};
		lumen_int_opt req{};
		int len = lumen_int_write_request_v(buf, sizeof(buf), version, uint32_t(ports.size()));
		EXPECT_EQ(len, int(lumen_int_opt_len(version, uint32_t(ports.size()))));
		if (len <= 0)
			return req;
		for (size_t i = 0; i < ports.size(); i++) {
			const Port &p = ports[i];
			lumen_int_hop hop;
			// a switch validates the option before it writes into it
			EXPECT_EQ(lumen_int_parse(buf, uint32_t(len), &req), 0);
			lumen_int_hop_make_v(&hop, version, p.clock_ns, p.tx_bytes, p.qlen_bytes,
					     lumen_int_rate_encode(p.rate_mbps));
			EXPECT_EQ(lumen_int_push_hop(buf, uint32_t(len), &hop), int(i));
		}
		EXPECT_EQ(lumen_int_parse(buf, uint32_t(len), &req), 0);
		EXPECT_EQ(req.count, ports.size());
		return req;
	}
};

// The echo of buf[0..len) as the sender parses it.
lumen_int_opt parsed_echo(const uint8_t *buf, int len)
{
	lumen_int_opt e{};
	EXPECT_GT(len, 0) << lumen_int_strerror(len);
	if (len > 0) {
		EXPECT_EQ(lumen_int_parse(buf, uint32_t(len), &e), 0);
		EXPECT_TRUE(e.flags & LUMEN_INT_FLAG_ECHO);
	}
	return e;
}

lumen_int_opt full_echo(const lumen_int_opt &req)
{
	uint8_t buf[LUMEN_INT_MAX_LEN];
	return parsed_echo(buf, lumen_int_write_echo_range(buf, sizeof(buf), &req, 0, req.count));
}

// Only record `hop` of the request (what lumen_int_write_echo_fit sends for
// the bottleneck), named by its path index.
lumen_int_opt partial_echo(const lumen_int_opt &req, uint32_t hop)
{
	uint8_t buf[LUMEN_INT_MAX_LEN];
	lumen_int_opt e = parsed_echo(buf, lumen_int_write_echo_range(buf, sizeof(buf), &req, hop, 1));
	EXPECT_EQ(e.count, 1);
	EXPECT_EQ(e.first_hop, hop);
	EXPECT_EQ(e.path_hops, req.count);
	return e;
}

// The echo a receiver sends with `space` bytes of option space left.
lumen_int_opt echo_in_space(const lumen_int_opt &req, uint32_t space)
{
	uint8_t buf[LUMEN_INT_MAX_LEN];
	return parsed_echo(buf, lumen_int_write_echo_fit(buf, space, &req));
}

struct Acked {
	lumen_ptcp_result result;
	lumen_int_opt echo;
};

// An ACK dt_ns after the previous one (host and switch clocks advance
// together), echoing the request a segment just carried across the path.
Acked ack_full(ptcp_stream &s, Path &path, uint64_t dt_ns)
{
	path.advance(dt_ns);
	Acked a{LUMEN_PTCP_HELD, full_echo(path.request())};
	a.result = ptcp_stream_ack(&s, &a.echo, dt_ns, kMss);
	return a;
}

Acked ack_partial(ptcp_stream &s, Path &path, uint64_t dt_ns, uint32_t hop)
{
	path.advance(dt_ns);
	Acked a{LUMEN_PTCP_HELD, partial_echo(path.request(), hop)};
	a.result = ptcp_stream_ack(&s, &a.echo, dt_ns, kMss);
	return a;
}

Acked ack_in_space(ptcp_stream &s, Path &path, uint64_t dt_ns, uint32_t space)
{
	path.advance(dt_ns);
	Acked a{LUMEN_PTCP_HELD, echo_in_space(path.request(), space)};
	a.result = ptcp_stream_ack(&s, &a.echo, dt_ns, kMss);
	return a;
}

// Normalised power of one hop in natural units (thesis' formula): two of its
// records dt_ns apart, the port sending util of its line rate while its
// queue went from q0 to q1 bytes.
double hop_power(uint32_t rate_mbps, double util, double q0, double q1, double dt_ns)
{
	double b = double(rate_mbps) / 8000.0; // bytes per ns
	double current = (util * b * dt_ns + q1 - q0) / (b * dt_ns);
	return current * (1 + q1 / (b * double(kTau)));
}

double power_of(const lumen_ptcp &st)
{
	return double(st.last_power) / double(LUMEN_PTCP_ONE);
}

bool same_hop(const lumen_int_hop &a, const lumen_int_hop &b)
{
	return a.ts == b.ts && a.tx == b.tx && a.qlen == b.qlen && a.rate == b.rate;
}

// ------------------------------------------------------------------------
// How far apart two echoes may be

TEST(IntV2Gap, EchoesUpToAHundredMsApartAreUsableInVersion2AndAGapInVersion1)
{
	// a loaded link: 90 % busy with a standing queue of 10 units of 512 B
	// (a standing queue: the power is the same over any dt)
	const double want = hop_power(10000, 0.9, 5120, 5120, kMs);
	for (uint64_t gap : {3 * kMs, 20 * kMs, 100 * kMs}) {
		for (uint32_t ver : {LUMEN_INT_VERSION_WIDE, LUMEN_INT_VERSION}) {
			SCOPED_TRACE(testing::Message() << "gap " << gap << " ns, version " << ver);
			Path path(ver, {{10000, 0.9, 5120}, {25000, 0.5, 0}});
			ptcp_stream s = int_only_flow();
			for (int i = 0; i < 5; i++)
				ack_full(s, path, gap);
			if (ver == LUMEN_INT_VERSION_WIDE) {
				EXPECT_EQ(s.st.stats.int_updates, 4u); // all but the baseline
				EXPECT_EQ(s.st.stats.int_gap, 0u);
				EXPECT_EQ(s.st.stats.int_stale, 0u);
				EXPECT_EQ(s.st.stats.int_unusable, 1u);
				EXPECT_EQ(s.st.max_hop, 0);
				EXPECT_NEAR(power_of(s.st), want, 0.01);
			} else {
				EXPECT_EQ(s.st.stats.int_updates, 0u);
				EXPECT_EQ(s.st.stats.int_gap, 4u);
				EXPECT_EQ(s.st.stats.int_unusable, 5u);
				EXPECT_EQ(s.st.cwnd_bytes, 25000u); // never updated
			}
		}
	}
}

TEST(IntV2Gap, JustAboveTheLimitRebaselinesAndTheNextEchoIsUsedAgain)
{
	const uint64_t limit = lumen_int_dt_max_ns(LUMEN_INT_VERSION_WIDE);
	EXPECT_GT(limit, 125 * kMs); // "~126 ms"
	EXPECT_LT(limit, 127 * kMs);
	EXPECT_EQ(lumen_int_dt_max_ns(LUMEN_INT_VERSION), LUMEN_PTCP_INT_GAP_MAX_NS); // 1.97 ms

	Path path(LUMEN_INT_VERSION_WIDE, {{10000, 0.9, 5120}});
	ptcp_stream s = int_only_flow();
	EXPECT_EQ(ack_full(s, path, kMs).result, LUMEN_PTCP_HELD); // baseline
	EXPECT_EQ(ack_full(s, path, limit - kUs).result, LUMEN_PTCP_UPDATED_INT); // just below
	EXPECT_EQ(s.st.stats.int_gap, 0u);

	EXPECT_EQ(ack_full(s, path, limit + kUs).result, LUMEN_PTCP_HELD);
	EXPECT_EQ(s.st.stats.int_gap, 1u);
	EXPECT_EQ(s.st.stats.int_stale, 0u); // the host-time check, before the switch's dt
	EXPECT_EQ(s.st.prev_hop_time_ns[0], s.now_ns); // re-baselined on it
	EXPECT_EQ(ack_full(s, path, 10 * kMs).result, LUMEN_PTCP_UPDATED_INT);

	EXPECT_EQ(ack_full(s, path, limit).result, LUMEN_PTCP_HELD); // the limit itself is excluded
	EXPECT_EQ(s.st.stats.int_gap, 2u);
	EXPECT_EQ(ack_full(s, path, 10 * kMs).result, LUMEN_PTCP_UPDATED_INT);
	EXPECT_EQ(s.st.stats.int_updates, 3u);
	EXPECT_EQ(s.st.stats.int_path_changes, 0u);
}

// ------------------------------------------------------------------------
// Wraps

TEST(IntV2Wrap, TimestampAndByteCounterWrapGiveTheSamePowerAsNoWrap)
{
	// two copies of one path, the second's switch clock and byte counter
	// offset so that both wrap between the first and second echo; the
	// offsets are multiples of a tick (16 ns) and a byte unit (512 B), so
	// every record differs by whole units and the powers must be equal
	const uint64_t ts_wrap_ns = 1ull << (LUMEN_INT_V2_TS_BITS + LUMEN_INT_TS_UNIT_SHIFT); // 268 ms
	const uint64_t tx_wrap_bytes = 1ull << (LUMEN_INT_V2_TX_BITS + lumen_int_unit_shift(10000));
	Path plain(LUMEN_INT_VERSION_WIDE, {{10000, 0.9, 0}});
	Path wrapping = plain;
	wrapping.ports[0].clock_ns = 3 * ts_wrap_ns - 5 * kMs;
	wrapping.ports[0].tx_bytes = tx_wrap_bytes - 12000 * 512;
	ptcp_stream a = int_only_flow(), b = int_only_flow();

	const Acked a0 = ack_full(a, plain, kMs), b0 = ack_full(b, wrapping, kMs);
	plain.ports[0].qlen_bytes = wrapping.ports[0].qlen_bytes = 10240; // a queue builds
	const Acked a1 = ack_full(a, plain, 10 * kMs), b1 = ack_full(b, wrapping, 10 * kMs);
	// the wrapping copy did wrap, the plain one did not
	EXPECT_LT(b1.echo.hops[0].ts, b0.echo.hops[0].ts);
	EXPECT_LT(b1.echo.hops[0].tx, b0.echo.hops[0].tx);
	EXPECT_GT(a1.echo.hops[0].ts, a0.echo.hops[0].ts);
	EXPECT_GT(a1.echo.hops[0].tx, a0.echo.hops[0].tx);

	EXPECT_EQ(a1.result, LUMEN_PTCP_UPDATED_INT);
	EXPECT_EQ(b1.result, LUMEN_PTCP_UPDATED_INT);
	EXPECT_EQ(b.st.last_power, a.st.last_power);
	EXPECT_NEAR(power_of(b.st), hop_power(10000, 0.9, 0, 10240, 10 * kMs), 0.01);
	for (int i = 0; i < 5; i++) { // and the flows stay identical after it
		EXPECT_EQ(ack_full(b, wrapping, 7 * kMs).result, ack_full(a, plain, 7 * kMs).result);
		EXPECT_EQ(b.st.smooth_power, a.st.smooth_power) << i;
		EXPECT_EQ(b.st.cwnd_bytes, a.st.cwnd_bytes) << i;
	}
	EXPECT_EQ(a.st.stats.int_updates, 6u);
	EXPECT_EQ(b.st.stats.int_updates, 6u);
	EXPECT_EQ(b.st.stats.int_stale + b.st.stats.int_gap + b.st.stats.int_path_changes, 0u);
}

// ------------------------------------------------------------------------
// Partial echoes

// Hop 1 (10G) is 80 % busy with a small queue; hop 0 (25G) half busy; hop 2
// (40G) 60 % busy, empty until a test lets its queue grow.
Path three_hops()
{
	return Path(LUMEN_INT_VERSION_WIDE, {{25000, 0.5, 0}, {10000, 0.8, 5120}, {40000, 0.6, 0}});
}

TEST(IntV2Partial, PartialEchoesSampleAndUpdateOnlyTheirHop)
{
	Path path = three_hops();
	ptcp_stream s = int_only_flow();
	EXPECT_EQ(ack_full(s, path, kMs).result, LUMEN_PTCP_HELD);
	EXPECT_EQ(ack_full(s, path, kMs).result, LUMEN_PTCP_UPDATED_INT);
	EXPECT_EQ(s.st.max_hop, 1);
	EXPECT_EQ(s.st.prev_hop_valid, 0x7);
	const lumen_ptcp full = s.st;

	// loss recovery: five partial echoes of hop 1, 1 ms apart, while hop 2's
	// queue grows (by 20 units of 2 KiB each time) unseen
	for (int i = 1; i <= 5; i++) {
		SCOPED_TRACE(testing::Message() << "partial echo " << i);
		path.ports[2].qlen_bytes += 40960;
		const Acked a = ack_partial(s, path, kMs, 1);
		EXPECT_EQ(a.result, LUMEN_PTCP_UPDATED_INT);
		EXPECT_EQ(s.st.stats.int_updates, full.stats.int_updates + uint32_t(i));
		EXPECT_EQ(s.st.max_hop, 1);
		// hop 1's power alone: hop 2's would be 1.5 and more by now
		EXPECT_NEAR(power_of(s.st), hop_power(10000, 0.8, 5120, 5120, kMs), 0.01);
		EXPECT_TRUE(same_hop(s.st.prev_hops[1], a.echo.hops[0]));
		EXPECT_EQ(s.st.prev_hop_time_ns[1], s.now_ns);
		for (int h : {0, 2}) {
			EXPECT_TRUE(same_hop(s.st.prev_hops[h], full.prev_hops[h])) << h;
			EXPECT_EQ(s.st.prev_hop_time_ns[h], full.prev_hop_time_ns[h]) << h;
		}
		EXPECT_EQ(s.st.prev_hop_count, 3);
		EXPECT_EQ(s.st.prev_hop_valid, 0x7);
	}
	EXPECT_EQ(s.st.stats.int_path_changes, 0u);
	EXPECT_EQ(s.st.stats.int_gap + s.st.stats.int_stale + s.st.stats.int_duplicate, 0u);

	// the next full echo samples hop 2 against its record of 6 ms ago: the
	// whole queue growth over 6 ms, not over the 1 ms since the last echo
	const Acked a = ack_full(s, path, kMs);
	EXPECT_EQ(a.result, LUMEN_PTCP_UPDATED_INT);
	EXPECT_EQ(s.st.max_hop, 2);
	EXPECT_NEAR(power_of(s.st), hop_power(40000, 0.6, 0, 204800, 6 * kMs), 0.01);
	for (int h = 0; h < 3; h++) {
		EXPECT_TRUE(same_hop(s.st.prev_hops[h], a.echo.hops[h])) << h;
		EXPECT_EQ(s.st.prev_hop_time_ns[h], s.now_ns) << h;
	}
	EXPECT_EQ(s.st.stats.int_updates, full.stats.int_updates + 6);
	EXPECT_EQ(s.st.stats.int_path_changes, 0u);
}

TEST(IntV2Partial, AFullEchoAfterPartialsUsesOlderRecordsOnlyWithinTheLimit)
{
	// partial echoes 10 ms apart; the full echo comes 120 ms (within 126 ms)
	// or 140 ms (beyond) after hops 0 and 2 were last recorded
	for (int partials : {11, 13}) {
		SCOPED_TRACE(testing::Message() << partials << " partial echoes");
		Path path = three_hops();
		ptcp_stream s = int_only_flow();
		ack_full(s, path, kMs);
		EXPECT_EQ(ack_full(s, path, kMs).result, LUMEN_PTCP_UPDATED_INT);
		for (int i = 0; i < partials; i++)
			EXPECT_EQ(ack_partial(s, path, 10 * kMs, 1).result, LUMEN_PTCP_UPDATED_INT) << i;
		EXPECT_EQ(s.st.stats.int_updates, uint32_t(1 + partials));
		EXPECT_EQ(s.st.stats.int_gap, 0u);

		const Acked a = ack_full(s, path, 10 * kMs);
		const uint64_t since = uint64_t(partials + 1) * 10 * kMs;
		if (since < lumen_int_dt_max_ns(LUMEN_INT_VERSION_WIDE)) {
			EXPECT_EQ(a.result, LUMEN_PTCP_UPDATED_INT);
			EXPECT_EQ(s.st.stats.int_gap, 0u);
		} else {
			EXPECT_EQ(a.result, LUMEN_PTCP_HELD);
			EXPECT_EQ(s.st.stats.int_gap, 1u);
		}
		// either way every hop now holds this echo's record
		for (int h = 0; h < 3; h++) {
			EXPECT_TRUE(same_hop(s.st.prev_hops[h], a.echo.hops[h])) << h;
			EXPECT_EQ(s.st.prev_hop_time_ns[h], s.now_ns) << h;
		}
		EXPECT_EQ(ack_full(s, path, 10 * kMs).result, LUMEN_PTCP_UPDATED_INT);
		EXPECT_EQ(s.st.stats.int_path_changes, 0u);
		EXPECT_EQ(s.st.stats.int_stale, 0u);
	}
}

TEST(IntV2Partial, APartialEchoAfterAPathChangeRebaselinesHopByHop)
{
	Path two(LUMEN_INT_VERSION_WIDE, {{10000, 0.8, 0}, {10000, 0.5, 0}});
	ptcp_stream s = int_only_flow();
	ack_full(s, two, kMs);
	EXPECT_EQ(ack_full(s, two, kMs).result, LUMEN_PTCP_UPDATED_INT);
	EXPECT_EQ(s.st.prev_hop_count, 2);

	// the route changes to three hops; loss recovery echoes hop 2 first
	Path three(LUMEN_INT_VERSION_WIDE, {{10000, 0.8, 0}, {10000, 0.5, 0}, {40000, 0.6, 20480}});
	EXPECT_EQ(ack_partial(s, three, kMs, 2).result, LUMEN_PTCP_HELD);
	EXPECT_EQ(s.st.stats.int_path_changes, 1u);
	EXPECT_EQ(s.st.prev_hop_count, 3);
	EXPECT_EQ(s.st.prev_hop_valid, 0x4); // the old path's records are gone
	EXPECT_EQ(s.st.prev_hop_time_ns[2], s.now_ns);

	// hop 1 has no record on this path yet: not usable, and no path change
	EXPECT_EQ(ack_partial(s, three, kMs, 1).result, LUMEN_PTCP_HELD);
	EXPECT_EQ(s.st.prev_hop_valid, 0x6);
	EXPECT_EQ(s.st.stats.int_path_changes, 1u);
	EXPECT_EQ(s.st.stats.int_gap + s.st.stats.int_stale + s.st.stats.int_duplicate, 0u);
	EXPECT_EQ(s.st.stats.int_updates, 1u);

	// the next echo of each is
	EXPECT_EQ(ack_partial(s, three, kMs, 1).result, LUMEN_PTCP_UPDATED_INT);
	EXPECT_EQ(s.st.max_hop, 1);
	EXPECT_NEAR(power_of(s.st), hop_power(10000, 0.5, 0, 0, kMs), 0.01);
	EXPECT_EQ(ack_partial(s, three, 2 * kMs, 2).result, LUMEN_PTCP_UPDATED_INT);
	EXPECT_EQ(s.st.max_hop, 2);
	EXPECT_NEAR(power_of(s.st), hop_power(40000, 0.6, 20480, 20480, 3 * kMs), 0.01);

	// a full echo still finds hop 0 without a record: a baseline for it
	EXPECT_EQ(ack_full(s, three, kMs).result, LUMEN_PTCP_HELD);
	EXPECT_EQ(s.st.prev_hop_valid, 0x7);
	EXPECT_EQ(ack_full(s, three, kMs).result, LUMEN_PTCP_UPDATED_INT);
	EXPECT_EQ(s.st.stats.int_path_changes, 1u);
	EXPECT_EQ(s.st.stats.int_updates, 4u);
}

// ------------------------------------------------------------------------
// Version changes, max_hop

TEST(IntV2Version, AVersionChangeOnOneFlowRebaselinesLikeAPathChange)
{
	// the same three switches, the same hop count: only the version changes
	Path path(LUMEN_INT_VERSION, {{10000, 0.8, 0}, {25000, 0.5, 0}, {40000, 0.3, 0}});
	ptcp_stream s = int_only_flow();
	ack_full(s, path, kMs);
	EXPECT_EQ(ack_full(s, path, kMs).result, LUMEN_PTCP_UPDATED_INT);
	EXPECT_EQ(s.st.prev_version, LUMEN_INT_VERSION);

	uint32_t changes = 0;
	for (uint32_t ver : {LUMEN_INT_VERSION_WIDE, LUMEN_INT_VERSION}) {
		SCOPED_TRACE(testing::Message() << "to version " << ver);
		path.version = ver;
		EXPECT_EQ(ack_full(s, path, kMs).result, LUMEN_PTCP_HELD);
		EXPECT_EQ(s.st.stats.int_path_changes, ++changes);
		EXPECT_EQ(s.st.stats.int_stale, 0u); // not a delta across formats
		EXPECT_EQ(s.st.prev_version, ver);
		EXPECT_EQ(s.st.prev_hop_count, 3);
		EXPECT_EQ(ack_full(s, path, kMs).result, LUMEN_PTCP_UPDATED_INT);
		EXPECT_NEAR(power_of(s.st), hop_power(10000, 0.8, 0, 0, kMs), 0.01);
	}
	EXPECT_EQ(s.st.stats.int_updates, 3u);
}

TEST(IntV2MaxHop, NamesThePathIndexOfTheHopThatGaveThePower)
{
	// hop 0 runs full with a growing queue (the largest power); hop 2 holds
	// the longest queueing delay (the bottleneck a partial echo carries)
	Path path(LUMEN_INT_VERSION_WIDE, {{10000, 1.0, 0}, {25000, 0.5, 0}, {10000, 0.3, 10240}});
	ptcp_stream s = int_only_flow();
	ack_full(s, path, kMs);
	path.ports[0].qlen_bytes += 2560;
	EXPECT_EQ(ack_full(s, path, kMs).result, LUMEN_PTCP_UPDATED_INT);
	EXPECT_EQ(s.st.max_hop, 0);
	EXPECT_NEAR(power_of(s.st), hop_power(10000, 1.0, 0, 2560, kMs), 0.01);

	// one SACK block next to timestamps leaves 15 bytes: one wide record
	path.ports[0].qlen_bytes += 2560;
	const Acked a = ack_in_space(s, path, kMs, LUMEN_INT_V2_OPT_LEN(1));
	EXPECT_EQ(a.echo.count, 1);
	EXPECT_EQ(a.echo.first_hop, 2);
	EXPECT_EQ(a.echo.path_hops, 3);
	EXPECT_EQ(a.result, LUMEN_PTCP_UPDATED_INT);
	EXPECT_EQ(s.st.max_hop, 2);
	EXPECT_NEAR(power_of(s.st), hop_power(10000, 0.3, 10240, 10240, kMs), 0.01);

	// with room for the whole echo, the hop with the largest power again
	path.ports[0].qlen_bytes += 2560;
	EXPECT_EQ(ack_in_space(s, path, kMs, LUMEN_INT_V2_OPT_LEN(3)).echo.count, 3);
	EXPECT_EQ(s.st.max_hop, 0);
	EXPECT_EQ(s.st.stats.int_updates, 3u);
	EXPECT_EQ(s.st.stats.int_path_changes, 0u);
}

// ------------------------------------------------------------------------
// Hand-built echoes whose shape contradicts itself

struct Shape {
	const char *name;
	uint8_t version, first_hop, path_hops, count;
};

// A flow on three_hops() with one usable sample, then `echoes` real,
// advancing echoes (each would give a sample) reshaped as `shape`: on the
// heap, exactly their size, so that ASan sees a read past hops[]. Returns
// the state before the reshaped echoes; s is the state after.
lumen_ptcp feed_reshaped(ptcp_stream &s, const Shape &shape, int echoes)
{
	Path path = three_hops();
	s = int_only_flow();
	ack_full(s, path, kMs);
	EXPECT_EQ(ack_full(s, path, kMs).result, LUMEN_PTCP_UPDATED_INT);
	const lumen_ptcp before = s.st;
	for (int i = 0; i < echoes; i++) {
		path.advance(kMs);
		auto echo = std::make_unique<lumen_int_opt>(full_echo(path.request()));
		echo->version = shape.version;
		echo->first_hop = shape.first_hop;
		echo->path_hops = shape.path_hops;
		echo->count = shape.count;
		EXPECT_NE(ptcp_stream_ack(&s, echo.get(), kMs, kMss), LUMEN_PTCP_UPDATED_INT) << "echo " << i;
	}
	return before;
}

void expect_no_sample(const lumen_ptcp &before, const lumen_ptcp &after, int echoes)
{
	EXPECT_EQ(after.stats.int_updates, before.stats.int_updates);
	EXPECT_EQ(after.stats.int_unusable, before.stats.int_unusable + uint32_t(echoes));
	EXPECT_EQ(after.smooth_power, before.smooth_power);
	EXPECT_EQ(after.cwnd_bytes, before.cwnd_bytes);
	EXPECT_LE(after.max_hop, 2);
	EXPECT_LE(after.prev_hop_count, LUMEN_INT_MAX_HOPS);
}

TEST(IntV2Hostile, InconsistentFirstHopPathHopsAndCountGiveNoSample)
{
	const Shape shapes[] = {
		{"first + count > path_hops", LUMEN_INT_VERSION_WIDE, 2, 3, 2},
		{"first == path_hops", LUMEN_INT_VERSION_WIDE, 3, 3, 1},
		{"first_hop 200", LUMEN_INT_VERSION_WIDE, 200, 3, 1},
		{"count 7 > path_hops", LUMEN_INT_VERSION_WIDE, 0, 3, 7},
		{"first 1, count 3, path_hops 3", LUMEN_INT_VERSION_WIDE, 1, 3, 3},
		{"all nibbles 15", LUMEN_INT_VERSION_WIDE, 15, 15, 7},
		{"path_hops 0", LUMEN_INT_VERSION_WIDE, 0, 0, 1},
		{"version 1, count 7 > 5", LUMEN_INT_VERSION, 0, 0, 7},
	};
	for (const Shape &shape : shapes) {
		SCOPED_TRACE(shape.name);
		ptcp_stream s;
		const lumen_ptcp before = feed_reshaped(s, shape, 3);
		expect_no_sample(before, s.st, 3);
		// a shape that still names the flow's three-hop path in its version
		// is no path change either, and records nothing
		if (shape.version == LUMEN_INT_VERSION_WIDE && shape.path_hops == 3) {
			EXPECT_EQ(s.st.stats.int_path_changes, before.stats.int_path_changes);
			EXPECT_EQ(s.st.prev_hop_valid, before.prev_hop_valid);
			EXPECT_EQ(std::memcmp(s.st.prev_hops, before.prev_hops, sizeof(before.prev_hops)), 0);
			EXPECT_EQ(std::memcmp(s.st.prev_hop_time_ns, before.prev_hop_time_ns,
					      sizeof(before.prev_hop_time_ns)),
				  0);
		}
	}
}

// More hops than the state (and any version) has room for: as inconsistent as
// the shapes above, so no sample either. (The core clamps path_hops to 5 and
// takes the echo as records 0..2 of a 5-hop path: a sample from the second
// such echo on.)
TEST(IntV2Hostile, PathHopsAboveFiveGiveNoSample)
{
	for (uint8_t path_hops : {6, 9, 15}) {
		SCOPED_TRACE(testing::Message() << "path_hops " << int(path_hops));
		ptcp_stream s;
		const lumen_ptcp before = feed_reshaped(s, Shape{"", LUMEN_INT_VERSION_WIDE, 0, path_hops, 3}, 3);
		expect_no_sample(before, s.st, 3);
	}
}

// ------------------------------------------------------------------------
// Liveness (tests/ptcp_stream.h) with version 2

// A three-hop version 2 path claiming to be nearly idle, echoed whole on two
// ACKs of three and as the bottleneck alone (loss recovery) on the third.
void drive_lying_path(ptcp_stream &s, int acks)
{
	Path path(LUMEN_INT_VERSION_WIDE, {{10000, 0.1, 0}, {25000, 0.1, 0}, {40000, 0.1, 0}});
	for (int i = 0; i < acks; i++) {
		uint64_t dt = ptcp_stream_spacing(&s, kMss) + 1;
		path.advance(dt);
		const lumen_int_opt req = path.request();
		const lumen_int_opt e = i % 3 == 2 ? echo_in_space(req, LUMEN_INT_V2_OPT_LEN(1)) : full_echo(req);
		ptcp_stream_ack(&s, &e, dt, kMss);
		ASSERT_GE(s.st.cwnd_bytes, 2u * kMss);
		ASSERT_LE(s.st.cwnd_bytes, 27500u); // host BDP + beta
	}
}

TEST(IntV2Liveness, ALyingVersion2StreamCannotStopTheWindowFromShrinking)
{
	// RTTs of 250 tau (5 ms) to 20000 tau (400 ms): at the 2 MSS the window
	// falls to, ACKs come half an RTT apart, so version 2 uses the lie across
	// up to 126 ms between echoes where version 1 never did (int_gap from
	// 1.97 ms on); at 400 ms the echoes end up too far apart even for it
	for (uint64_t rtt : {5 * kMs, 50 * kMs, 400 * kMs}) {
		SCOPED_TRACE(testing::Message() << "rtt " << rtt << " ns");
		lumen_ptcp_params p = params_10g_20us();
		ptcp_stream s;
		ptcp_stream_init(&s, &p, rtt, kMss, 1000);
		drive_lying_path(s, 4000);
		EXPECT_LE(s.st.cwnd_bytes, ptcp_stream_bound(&s));
		EXPECT_LT(s.st.cwnd_bytes, 25000u / 4);
		EXPECT_GT(s.st.stats.fallback_updates + s.st.stats.rtt_guard, 0u);
		if (rtt == 50 * kMs) {
			// the lie was used on nearly every ACK, and the guard overrode it
			EXPECT_GT(s.st.stats.int_updates, 3900u);
			EXPECT_EQ(s.st.stats.int_gap, 0u);
			EXPECT_GE(s.st.stats.rtt_guard + 40, s.st.stats.int_updates);
			EXPECT_EQ(s.st.stats.fallback_updates, 0u);
		}
		if (rtt == 400 * kMs) { // ACKs 200 ms apart once the window is down
			EXPECT_GT(s.st.stats.int_gap, 1000u);
			EXPECT_GT(s.st.stats.fallback_updates, 0u);
		}
	}
}

} // namespace

// A request/response flow whose echoes are version 2 keeps its INT history
// across pauses up to a quarter of the 268 ms wrap (67 ms), as a version 1
// flow does up to 1.05 ms: TX_START after a 20 ms pause is no restart.
TEST(IntV2Idle, TxStartRestartsOnlyAfterAQuarterOfTheVersion2Wrap)
{
	EXPECT_EQ(LUMEN_PTCP_IDLE_V2_NS, (1ull << 28) / 4); // 67.1 ms
	lumen_ptcp_params p = params_10g_20us();
	ptcp_stream s;
	ptcp_stream_init(&s, &p, 0, kMss, 1000);
	s.st.have_rtt = 1;
	s.st.prev_rtt_time_ns = 5 * kMs;
	s.st.prev_hop_count = 1;
	s.st.prev_hop_valid = 1;
	s.st.prev_version = LUMEN_INT_VERSION;
	EXPECT_TRUE(lumen_ptcp_idle(&s.st, 5 * kMs + 20 * kMs)); // version 1: 1.05 ms
	s.st.prev_version = LUMEN_INT_VERSION_WIDE;
	EXPECT_FALSE(lumen_ptcp_idle(&s.st, 5 * kMs + 20 * kMs));
	EXPECT_FALSE(lumen_ptcp_idle(&s.st, 5 * kMs + LUMEN_PTCP_IDLE_V2_NS - 1));
	EXPECT_TRUE(lumen_ptcp_idle(&s.st, 5 * kMs + LUMEN_PTCP_IDLE_V2_NS));
	const uint32_t nxt = s.una + 10 * kMss;
	EXPECT_EQ(lumen_ptcp_tx_event(&s.st, LUMEN_PTCP_TX_START, 5 * kMs + 20 * kMs, nxt), 0u);
	EXPECT_EQ(s.st.prev_hop_valid, 1);
	EXPECT_EQ(lumen_ptcp_tx_event(&s.st, LUMEN_PTCP_TX_START, 5 * kMs + LUMEN_PTCP_IDLE_V2_NS, nxt),
		  LUMEN_PTCP_EV(RESTARTS));
	EXPECT_EQ(s.st.prev_hop_valid, 0);
	EXPECT_EQ(s.st.prev_hop_count, 0);
}

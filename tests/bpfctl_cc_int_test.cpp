// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/bpfctl/cc.h and int_sockops.h without a kernel: parameter and
// configuration checks (done before anything is touched), the counter
// tables, and the pin names of lumen/bpf_shared.h against the map names in
// the BPF objects (libbpf pins a map by its name). Loading runs in the e2e
// suites.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "base/error.h"
#include "bpfctl/cc.h"
#include "bpfctl/cc_flows.h"
#include "bpfctl/int_sockops.h"

#include "cc_flows.skel.h"
#include "int_sockops.skel.h"
#include "powertcp.skel.h"

using namespace lumen;

TEST(CcParams, ParsesEachParameter)
{
	CcParamChange c = parse_cc_params({"gamma=0.5", "flows=4", "beta=64k", "host-bw=10gbit", "base-rtt=40us"});
	lumen_ptcp_params p;
	lumen_ptcp_params_default(&p);
	c.apply(&p);
	EXPECT_EQ(p.gamma, 32768u);
	EXPECT_EQ(p.expected_flows, 4u);
	EXPECT_EQ(p.beta_bytes, 64u * 1024);
	EXPECT_EQ(p.host_bw_mbps, 10000u);
	EXPECT_EQ(p.base_rtt_ns, 40000u);
	EXPECT_TRUE(parse_cc_params({}).empty());
	lumen_ptcp_params q = p;
	parse_cc_params({"beta=auto", "base-rtt=auto"}).apply(&q);
	EXPECT_EQ(q.beta_bytes, 0u);
	EXPECT_EQ(q.base_rtt_ns, 0u);
	EXPECT_EQ(q.gamma, p.gamma); // unset fields untouched
}

TEST(CcParams, RefusesBadWords)
{
	EXPECT_THROW(parse_cc_params({"gamma"}), UsageError);
	EXPECT_THROW(parse_cc_params({"=1"}), UsageError);
	EXPECT_THROW(parse_cc_params({"speed=1"}), UsageError);
	EXPECT_THROW(parse_cc_params({"gamma=0.5", "gamma=0.6"}), UsageError);
	EXPECT_THROW(parse_cc_params({"gamma=2"}), UsageError);
	EXPECT_THROW(parse_cc_params({"flows=0"}), UsageError);
	EXPECT_THROW(parse_cc_params({"host-bw=fast"}), UsageError);
}

TEST(CcParams, AlgoMask)
{
	EXPECT_EQ(parse_cc_algo_mask("both"), kCcAllAlgos);
	EXPECT_EQ(parse_cc_algo_mask(LUMEN_CC_NAME_INT), 1u);
	EXPECT_EQ(parse_cc_algo_mask(LUMEN_CC_NAME_THETA), 2u);
	EXPECT_THROW(parse_cc_algo_mask("cubic"), UsageError);
}

TEST(IntConfig, RangeChecks)
{
	IntEnableRequest r;
	r.cgroup = "/sys/fs/cgroup/x";
	r.ports = {80, 443, 80};
	lumen_int_config c = int_config(r);
	EXPECT_EQ(c.enabled, 1u);
	EXPECT_EQ(c.slots, kIntDefaultSlots);
	EXPECT_EQ(c.families, 0u);
	ASSERT_EQ(c.nports, 2u); // duplicates once
	EXPECT_EQ(c.ports[0], 80);
	EXPECT_EQ(c.ports[1], 443);
	EXPECT_EQ(int_ports_text(c), "80,443");
	EXPECT_EQ(int_families_text(c.families), "ipv4,ipv6");

	EXPECT_EQ(c.version, unsigned{LUMEN_INT_VERSION});

	// version 2: its own default and maximum (9-byte records)
	IntEnableRequest wide = r;
	wide.wide = true;
	EXPECT_EQ(int_config(wide).version, unsigned{LUMEN_INT_VERSION_WIDE});
	EXPECT_EQ(int_config(wide).slots, kIntDefaultSlotsWide);
	wide.slots = LUMEN_INT_V2_MAX_HOPS;
	EXPECT_EQ(int_config(wide).slots, unsigned{LUMEN_INT_V2_MAX_HOPS});
	wide.slots = LUMEN_INT_V2_MAX_HOPS + 1;
	EXPECT_THROW(int_config(wide), UsageError);

	IntEnableRequest bad = r;
	bad.slots = LUMEN_INT_MAX_HOPS + 1;
	EXPECT_THROW(int_config(bad), UsageError);
	bad = r;
	bad.ports = {1, 2, 3, 4, 5, 6, 7, 8, 9};
	EXPECT_THROW(int_config(bad), UsageError);
	bad = r;
	bad.ports = {0};
	EXPECT_THROW(int_config(bad), UsageError);
	bad = r;
	bad.families = 0x4;
	EXPECT_THROW(int_config(bad), UsageError);
}

TEST(Counters, NamedOnceAndDistinct)
{
	std::set<std::string> cc, in;
	for (const auto &c : kCcCounters) {
		ASSERT_NE(c.name, nullptr);
		EXPECT_GT(std::strlen(c.help), 0u);
		cc.insert(c.name);
	}
	for (const auto &c : kIntCounters) {
		ASSERT_NE(c.name, nullptr);
		EXPECT_GT(std::strlen(c.help), 0u);
		in.insert(c.name);
	}
	EXPECT_EQ(cc.size(), std::size_t{LUMEN_CC_CNT_MAX});
	EXPECT_EQ(in.size(), std::size_t{LUMEN_INT_CNT_MAX});
	EXPECT_STREQ(kCcCounters[LUMEN_CC_CNT_RTT_GUARD].name, "rtt_guard");
	EXPECT_STREQ(kIntCounters[LUMEN_INT_CNT_NO_ROOM].name, "no_room");
}

// libbpf pins a map under its name: the names the control plane opens must
// be the names in the .bpf.c files. Opening a skeleton only parses the ELF.
TEST(PinNames, MatchTheBpfObjects)
{
	powertcp *cc = powertcp__open();
	ASSERT_NE(cc, nullptr);
	EXPECT_STREQ(bpf_map__name(cc->maps.lumen_cc_params), LUMEN_PIN_CC_PARAMS);
	EXPECT_STREQ(bpf_map__name(cc->maps.lumen_cc_faults), LUMEN_PIN_CC_FAULTS);
	EXPECT_STREQ(bpf_map__name(cc->maps.lumen_cc_stats), LUMEN_PIN_CC_STATS);
	EXPECT_STREQ(bpf_map__name(cc->maps.lumen_cc_sk), LUMEN_PIN_CC_SK);
	EXPECT_STREQ(bpf_map__name(cc->maps.lumen_int_sk), LUMEN_PIN_INT_SK);
	EXPECT_STREQ(bpf_map__name(cc->maps.ptcp_ops_int), kCcAlgos[0].map_name);
	EXPECT_STREQ(bpf_map__name(cc->maps.ptcp_ops_theta), kCcAlgos[1].map_name);
	powertcp__destroy(cc);

	int_sockops *in = int_sockops__open();
	ASSERT_NE(in, nullptr);
	EXPECT_STREQ(bpf_map__name(in->maps.lumen_int_sk), LUMEN_PIN_INT_SK);
	EXPECT_STREQ(bpf_map__name(in->maps.lumen_int_cfg), LUMEN_PIN_INT_CFG);
	EXPECT_STREQ(bpf_map__name(in->maps.lumen_int_stats), LUMEN_PIN_INT_STATS);
	int_sockops__destroy(in);

	// the flows iterator reuses the algorithms' socket storage: same map
	::cc_flows *fl = cc_flows__open();
	ASSERT_NE(fl, nullptr);
	cc = powertcp__open();
	ASSERT_NE(cc, nullptr);
	EXPECT_STREQ(bpf_map__name(fl->maps.lumen_cc_sk), LUMEN_PIN_CC_SK);
	EXPECT_EQ(bpf_map__value_size(fl->maps.lumen_cc_sk), bpf_map__value_size(cc->maps.lumen_cc_sk));
	powertcp__destroy(cc);
	cc_flows__destroy(fl);
}

TEST(CcFlows, RecordsBecomeEndpointsAndNames)
{
	lumen_cc_flow raw{};
	raw.family = 2; // AF_INET
	const unsigned char a[4] = {10, 231, 0, 1}, b[4] = {10, 231, 0, 2};
	std::memcpy(raw.saddr, a, 4);
	std::memcpy(raw.daddr, b, 4);
	raw.sport = 40522;
	raw.dport = 5201;
	raw.mode = LUMEN_PTCP_MODE_INT;
	raw.netns_ino = 4026531840u;
	CcFlow f = cc_flow_from(raw);
	EXPECT_EQ(f.local, "10.231.0.1:40522");
	EXPECT_EQ(f.remote, "10.231.0.2:5201");
	EXPECT_EQ(f.algo, LUMEN_CC_NAME_INT);
	EXPECT_EQ(f.netns_ino, 4026531840u);

	lumen_cc_flow v6{};
	v6.family = 10; // AF_INET6
	v6.saddr[15] = 1; // ::1
	v6.daddr[0] = 0xfd;
	v6.daddr[15] = 2;
	v6.sport = 1;
	v6.dport = 2;
	v6.mode = LUMEN_PTCP_MODE_THETA;
	CcFlow g = cc_flow_from(v6);
	EXPECT_EQ(g.local, "[::1]:1");
	EXPECT_EQ(g.remote, "[fd00::2]:2");
	EXPECT_EQ(g.algo, LUMEN_CC_NAME_THETA);
}

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/bpfctl/switch_port.h without a kernel: what a port request may
// ask for (checked before anything is touched) and the queue quantiles read
// from a port's log2 histogram. Attaching runs in the e2e suites.
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "bpfctl/switch_port.h"

using namespace lumen;

namespace
{

SwitchPortRequest good()
{
	SwitchPortRequest r;
	r.dev = "veth0";
	r.peer = "veth1";
	r.dev_netns = "lt-a-sw";
	r.peer_netns = "lt-a-h0";
	r.rate_mbps = 100;
	r.buffer_bytes = 256 * 1024;
	r.ecn_threshold_bytes = 64 * 1024;
	return r;
}

std::string refusal(const SwitchPortRequest &r)
{
	try {
		check_switch_port_request(r);
	} catch (const UsageError &e) {
		return e.what();
	}
	return "";
}

} // namespace

TEST(SwitchPortRequest, AcceptsAGoodOne)
{
	EXPECT_EQ(refusal(good()), "");
}

TEST(SwitchPortRequest, RefusesWhatCannotWork)
{
	SwitchPortRequest r = good();
	r.rate_mbps = 0;
	EXPECT_NE(refusal(r).find("--rate"), std::string::npos);
	r = good();
	r.buffer_bytes = 0;
	EXPECT_NE(refusal(r).find("--buffer: 0"), std::string::npos);
	r = good();
	r.buffer_bytes = kSwitchMaxBuffer + 1;
	EXPECT_NE(refusal(r), "");
	r = good();
	r.ecn_threshold_bytes = r.buffer_bytes;
	EXPECT_NE(refusal(r).find("nothing could ever be marked"), std::string::npos);
	r = good();
	r.port_id = LUMEN_SWITCH_MAX_PORTS;
	EXPECT_NE(refusal(r).find("--port-id"), std::string::npos);
	r = good();
	r.dev = "a/b";
	EXPECT_NE(refusal(r).find("DEV"), std::string::npos);
	r = good();
	r.peer_netns = "..";
	EXPECT_NE(refusal(r).find("--peer-netns"), std::string::npos);
}

TEST(SwitchQueue, QuantilesFromTheHistogram)
{
	lumen_switch_port_stats st{};
	EXPECT_EQ(switch_queue_quantile(st, 0.5), 0u); // no samples
	st.qlen_hist[0] = 50; // empty queue half the time
	st.qlen_hist[11] = 50; // [1024, 2048) bytes the other half
	st.qlen_max = 1500;
	EXPECT_EQ(switch_queue_quantile(st, 0.5), 0u);
	const std::uint64_t p99 = switch_queue_quantile(st, 0.99);
	EXPECT_GE(p99, 1024u);
	EXPECT_LE(p99, 1500u); // never above what was seen
	EXPECT_EQ(switch_queue_quantile(st, 1.0), 1500u);
}

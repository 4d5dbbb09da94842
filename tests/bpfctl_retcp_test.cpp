// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// bpf_retcp's loader without a kernel (bpfctl/retcp.h): what a request
// must hold before anything is loaded (a lumend to follow, one address per
// node of its schedule, parameters in range), and that every refusal names
// what is wrong. Loading, following lumend and the jumps themselves are
// tests/e2e/retcp_test.sh's (root).
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "bpfctl/retcp.h"
#include "sched/schedule.h"

using namespace lumen;

namespace
{

RetcpRequest valid()
{
	sched::Timing tm;
	tm.slot_ns = 20'000'000;
	tm.guard_ns = 2'000'000;
	RetcpRequest r;
	r.lumend = "me";
	r.schedule = sched::round_robin(3, 1, false, tm);
	r.host_addrs = {0x0a000001, 0x0a000002, 0x0a000003};
	return r;
}

std::string refusal(const RetcpRequest &r)
{
	try {
		check_retcp_request(r);
	} catch (const UsageError &e) {
		return e.what();
	}
	return "";
}

} // namespace

TEST(BpfctlRetcp, AValidRequestPasses)
{
	EXPECT_EQ(refusal(valid()), "");
	RetcpRequest r = valid();
	r.params.jump = LUMEN_RETCP_JUMP_MAX;
	r.params.prebuffer_ns = LUMEN_RETCP_PREBUFFER_MAX_NS;
	EXPECT_EQ(refusal(r), "");
}

TEST(BpfctlRetcp, RefusalsNameWhatIsWrong)
{
	RetcpRequest r = valid();
	r.lumend.clear();
	EXPECT_NE(refusal(r).find("lumend"), std::string::npos);

	r = valid();
	r.host_addrs.pop_back();
	EXPECT_NE(refusal(r).find("2 addresses for 3 nodes"), std::string::npos);

	r = valid();
	r.host_addrs[2] = r.host_addrs[0];
	EXPECT_NE(refusal(r).find("same address"), std::string::npos);

	r = valid();
	r.params.jump = 0;
	EXPECT_NE(refusal(r).find("jump"), std::string::npos);
	r.params.jump = LUMEN_RETCP_JUMP_MAX + 1;
	EXPECT_NE(refusal(r).find("jump"), std::string::npos);

	r = valid();
	r.params.prebuffer_ns = LUMEN_RETCP_PREBUFFER_MAX_NS + 1;
	EXPECT_NE(refusal(r).find("prebuffer"), std::string::npos);
}

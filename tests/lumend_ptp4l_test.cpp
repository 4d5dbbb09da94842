// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/lumend_ptp4l_test.cpp - the clock's bound from ptp4l (userspace/
// lumend/ptp4l.h): the request's bytes, parsing answers built byte by byte
// (a follower, one that names itself the grandmaster, errors and garbage),
// the bound over the last readings, staleness, and the verdict against the
// margin.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "lumend/clock.h"
#include "lumend/ptp4l.h"

namespace
{

using namespace lumen::lumend;

constexpr uint64_t kMs = 1'000'000;

void put_be(std::vector<uint8_t> &m, size_t at, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--, v >>= 8)
		m[at + (size_t)i] = (uint8_t)v;
}

// A RESPONSE of TIME_STATUS_NP from clock `self`, following `gm`.
std::vector<uint8_t> answer(int64_t offset, int64_t ingress, bool present, uint64_t self, uint64_t gm)
{
	std::vector<uint8_t> m = time_status_request(9);
	m[34 + 12] = 2; // RESPONSE
	put_be(m, 20, self, 8);
	put_be(m, 48 + 2, 52, 2); // lengthField: id + 50 bytes
	m.resize(m.size() + 50, 0);
	size_t d = 54;
	put_be(m, d, (uint64_t)offset, 8);
	put_be(m, d + 8, (uint64_t)ingress, 8);
	put_be(m, d + 38, present ? 1 : 0, 4);
	put_be(m, d + 42, gm, 8);
	put_be(m, 2, m.size(), 2);
	return m;
}

TEST(Ptp4l, RequestBytes)
{
	std::vector<uint8_t> m = time_status_request(0x1234);
	ASSERT_EQ(m.size(), 54u);
	EXPECT_EQ(m[0], 0x0D); // management
	EXPECT_EQ(m[1], 2); // PTP v2
	EXPECT_EQ(m[2] << 8 | m[3], 54);
	EXPECT_EQ(m[30] << 8 | m[31], 0x1234); // sequenceId
	EXPECT_EQ(m[32], 4);
	for (int i = 34; i < 44; i++)
		EXPECT_EQ(m[i], 0xff); // every port
	EXPECT_EQ(m[46], 0); // GET
	EXPECT_EQ(m[48] << 8 | m[49], 1); // MANAGEMENT TLV
	EXPECT_EQ(m[50] << 8 | m[51], 2);
	EXPECT_EQ(m[52] << 8 | m[53], 0xC000);
}

TEST(Ptp4l, ParsesAFollowerAndTheGrandmaster)
{
	std::string why;
	std::vector<uint8_t> a = answer(-2486, 1795634672209041819, true, 0x1111, 0x2222);
	auto st = parse_time_status(a.data(), a.size(), &why);
	ASSERT_TRUE(st) << why;
	EXPECT_EQ(st->master_offset_ns, -2486);
	EXPECT_EQ(st->ingress_ns, 1795634672209041819);
	EXPECT_TRUE(st->gm_present);
	EXPECT_FALSE(st->is_gm);
	a = answer(0, 0, false, 0x1111, 0x1111);
	st = parse_time_status(a.data(), a.size(), &why);
	ASSERT_TRUE(st);
	EXPECT_TRUE(st->is_gm);
	EXPECT_FALSE(st->gm_present);
}

TEST(Ptp4l, RefusesWhatIsNotTheAnswer)
{
	std::string why;
	std::vector<uint8_t> a = answer(1, 1, true, 1, 2);
	EXPECT_FALSE(parse_time_status(a.data(), 40, &why));
	EXPECT_NE(why.find("no management message"), std::string::npos);
	std::vector<uint8_t> get = time_status_request(1);
	EXPECT_FALSE(parse_time_status(get.data(), get.size(), &why)); // a GET, not a RESPONSE
	EXPECT_NE(why.find("no RESPONSE"), std::string::npos);
	std::vector<uint8_t> other = a;
	put_be(other, 52, 0x2001, 2); // another managementId
	EXPECT_FALSE(parse_time_status(other.data(), other.size(), &why));
	EXPECT_NE(why.find("not TIME_STATUS_NP"), std::string::npos);
	std::vector<uint8_t> err = a;
	put_be(err, 48, 2, 2); // MANAGEMENT_ERROR_STATUS
	EXPECT_FALSE(parse_time_status(err.data(), err.size(), &why));
	EXPECT_NE(why.find("refused"), std::string::npos);
	EXPECT_FALSE(parse_time_status(a.data(), a.size() - 1, &why)); // the data cut short
}

TEST(Ptp4l, BoundIsTheLargestOffsetOfTheWindowAndStaleAfterFourSeconds)
{
	Ptp4lBound b;
	EXPECT_FALSE(judge_ptp4l(b.reading(), 10'000).ok); // not asked yet
	uint64_t now = 1'000 * kMs;
	TimeStatus st;
	st.gm_present = true;
	int64_t offsets[] = {300, -5000, 200, 100, 100, 100, 100, 100, 100};
	for (size_t i = 0; i < 9; i++) {
		st.master_offset_ns = offsets[i];
		st.ingress_ns = (int64_t)i;
		b.feed(st, "", now += 100 * kMs);
		if (i == 1) {
			EXPECT_EQ(b.reading().bound_ns, 5000u);
		}
	}
	EXPECT_EQ(b.reading().bound_ns, 5000u); // still in the last 8
	b.feed(st, "", now += 100 * kMs); // the same sync again: -5000 leaves the window
	EXPECT_EQ(b.reading().bound_ns, 200u);
	EXPECT_TRUE(judge_ptp4l(b.reading(), 10'000).ok);
	EXPECT_FALSE(judge_ptp4l(b.reading(), 150).ok); // over the margin
	EXPECT_NE(judge_ptp4l(b.reading(), 150).why.find("over the margin"), std::string::npos);
	b.feed(st, "", now += 4'100 * kMs); // no new sync for 4.2 s
	EXPECT_FALSE(b.reading().ok);
	EXPECT_NE(b.reading().why.find("no sync for"), std::string::npos);
	st.ingress_ns = 100;
	b.feed(st, "", now += 100 * kMs);
	EXPECT_TRUE(b.reading().ok);
	st.gm_present = false;
	b.feed(st, "", now += 100 * kMs);
	EXPECT_NE(judge_ptp4l(b.reading(), 10'000).why.find("no grandmaster"), std::string::npos);
	b.feed(std::nullopt, "ptp4l did not answer", now += 100 * kMs);
	EXPECT_EQ(judge_ptp4l(b.reading(), 10'000).why, "ptp4l did not answer");
	EXPECT_EQ(b.reading().failures, 1u);
	st.is_gm = true; // its own grandmaster (or none found yet): not trusted
	b.feed(st, "", now += 100 * kMs);
	EXPECT_FALSE(judge_ptp4l(b.reading(), 1'000'000).ok);
	EXPECT_NE(b.reading().why.find("it is its own"), std::string::npos);
}

} // namespace

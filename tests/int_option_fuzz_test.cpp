// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Seeded random ("fuzz") test of the INT option parser, echo writer and
 * switch-side push (include/lumen/int_option.h). Deterministic: a fixed seed
 * and a self-contained generator, so a failure reproduces exactly.
 *
 * Inputs: purely random buffers (length 0..64), random buffers with a
 * plausible header, options of 6 or more hop records (lengths 47, 54, ...,
 * which this version refuses), and mutations of valid requests and echoes
 * and of those long options (flipped bits, changed length/count/version/flag
 * bytes, bad rate codes, truncation, trailing bytes). Every input is handed
 * to the parser in a heap buffer of exactly its length, so the ASan build
 * catches any read past the end.
 *
 * Checked for every input:
 *   - parse fails with exactly the error an independent oracle, written from
 *     the documented check order, expects (the first check that fails:
 *     buffer < 2, kind, length < 4, length > buffer, ExID, length < 5,
 *     version, length not 5 + 7n, more than 5 slots, count beyond slots,
 *     echo count != slots / request without slots, rate codes of the
 *     filled hops), and leaves the output untouched; or
 *   - parse succeeds exactly when the oracle accepts, with a self-consistent
 *     result (version 1, slots = (len - 5) / 7 <= 5, count <= slots, echo
 *     implies count == slots, valid rate codes in filled hops, unused slots
 *     cleared), and re-encoding the result reproduces the accepted bytes; its
 *     echo parses back to the same filled hops;
 *   - lumen_int_push_hop on the same (arbitrary) bytes writes only inside the
 *     option, only where documented, and nothing at all when it refuses.
 */
#include "int_option_oracle.h"
#include "lumen/int_option.h"
#include "test_rng.h"

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace
{

using Bytes = std::vector<std::uint8_t>;

using lumen::test::Rng;

/* ---------------------------------------------------------------------- */
/* Oracle, from the documentation only                                     */

int oracle(const std::uint8_t *p, std::size_t n)
{
	return lumen_doc_parse_outcome(p, n);
}

/* ---------------------------------------------------------------------- */
/* Checks                                                                  */

struct Stats {
	std::uint64_t inputs = 0;
	std::uint64_t accepted = 0;
	std::uint64_t echoes = 0;
	std::array<std::uint64_t, LUMEN_INT_ERROR_COUNT> by_error{};
	std::uint64_t push_ok = 0, push_full = 0, push_refused = 0;
	/* EVERSION where, with version 1, a later check would have failed. */
	std::uint64_t version_first = 0;
};

std::string hex(const std::uint8_t *p, std::size_t n)
{
	std::string s;
	char b[4];
	for (std::size_t i = 0; i < n; i++) {
		std::snprintf(b, sizeof(b), "%02x ", p[i]);
		s += b;
	}
	return s;
}

/* Parse one input; returns false (after recording a failure) on a violation. */
bool check_parse(const Bytes &in, Stats &st)
{
	const std::size_t n = in.size();
	/* Exactly n bytes on the heap: any over-read is an ASan report. */
	std::unique_ptr<std::uint8_t[]> buf(new std::uint8_t[n]);
	if (n)
		std::memcpy(buf.get(), in.data(), n);
	const int want = oracle(buf.get(), n);

	lumen_int_opt opt, before;
	std::memset(&opt, 0x5A, sizeof(opt));
	std::memcpy(&before, &opt, sizeof(opt));
	const int rc = lumen_int_parse(buf.get(), static_cast<__u32>(n), &opt);
	st.inputs++;
	if (n && std::memcmp(buf.get(), in.data(), n) != 0) {
		ADD_FAILURE() << "parse wrote to its input: " << hex(in.data(), n);
		return false;
	}
	if (rc != 0) {
		if (rc >= 0 || -rc >= LUMEN_INT_ERROR_COUNT) {
			ADD_FAILURE() << "unknown error " << rc << " for " << hex(in.data(), n);
			return false;
		}
		st.by_error[static_cast<std::size_t>(-rc)]++;
		if (-rc != want) {
			ADD_FAILURE() << "error " << rc << " (" << lumen_int_strerror(rc) << "), expected " << -want
				      << " (" << (want ? lumen_int_strerror(want) : "accept") << ") for "
				      << hex(in.data(), n);
			return false;
		}
		if (std::memcmp(&opt, &before, sizeof(opt)) != 0) {
			ADD_FAILURE() << "output modified on error " << rc << " for " << hex(in.data(), n);
			return false;
		}
		if (want == LUMEN_INT_EVERSION) {
			Bytes v1 = in;
			v1[4] = static_cast<std::uint8_t>((v1[4] & 0x1F) | 0x20);
			st.version_first += oracle(v1.data(), n) != 0;
		}
		return true;
	}
	if (want != 0) {
		ADD_FAILURE() << "accepted, expected error " << -want << " (" << lumen_int_strerror(want) << ") for "
			      << hex(in.data(), n);
		return false;
	}
	st.accepted++;

	const unsigned len = in[1];
	const unsigned slots = (len - 5) / 7;
	const bool is_echo = opt.flags & LUMEN_INT_FLAG_ECHO;
	st.echoes += is_echo;
	bool ok = opt.version == 1 && opt.slots == slots && slots <= LUMEN_INT_MAX_HOPS && opt.count <= opt.slots &&
		  (!is_echo || opt.count == opt.slots) && (is_echo || opt.slots >= 1) &&
		  (opt.flags & ~(LUMEN_INT_FLAG_ECHO | LUMEN_INT_FLAG_OVERFLOW)) == 0 && opt.flags == (in[4] & 0x18) &&
		  opt.count == (in[4] & 7);
	for (unsigned i = 0; ok && i < LUMEN_INT_MAX_HOPS; i++) {
		const lumen_int_hop &h = opt.hops[i];
		ok = h.ts <= LUMEN_INT_TS_MASK && h.tx <= LUMEN_INT_TX_MASK && h.qlen <= LUMEN_INT_QLEN_MAX &&
		     h.rate < 1024 && h.pad == 0;
		if (ok && i < opt.count)
			ok = lumen_int_rate_code_valid(h.rate);
		if (ok && i >= slots)
			ok = h.ts == 0 && h.tx == 0 && h.qlen == 0 && h.rate == 0;
	}
	if (!ok) {
		ADD_FAILURE() << "inconsistent parse result for " << hex(in.data(), n);
		return false;
	}

	/* Re-encode the whole option: header plus every slot present. */
	std::uint8_t re[LUMEN_INT_MAX_LEN + 8];
	std::memset(re, 0xEE, sizeof(re));
	lumen_int_write_hdr(re, opt.slots, opt.flags, opt.count);
	for (unsigned i = 0; i < opt.slots; i++)
		lumen_int_hop_pack(&opt.hops[i], re + LUMEN_INT_HDR_LEN + LUMEN_INT_HOP_LEN * i);
	if (std::memcmp(re, in.data(), len) != 0) {
		ADD_FAILURE() << "re-encoding differs: " << hex(re, len) << "vs " << hex(in.data(), len);
		return false;
	}

	/* Its echo: same filled hop bytes, E set, O carried; parses back. */
	std::uint8_t echo[LUMEN_INT_MAX_LEN + 8];
	std::memset(echo, 0xEE, sizeof(echo));
	const int elen = lumen_int_write_echo(echo, LUMEN_INT_MAX_LEN, &opt);
	const unsigned filled_end = LUMEN_INT_HDR_LEN + LUMEN_INT_HOP_LEN * opt.count;
	if (elen != static_cast<int>(filled_end) || echo[0] != 253 || echo[1] != filled_end || echo[2] != 0x4C ||
	    echo[3] != 0x55 || echo[4] != (0x30 | (opt.flags & LUMEN_INT_FLAG_OVERFLOW) | opt.count) ||
	    std::memcmp(echo + 5, in.data() + 5, filled_end - 5) != 0 || echo[filled_end] != 0xEE) {
		ADD_FAILURE() << "bad echo " << hex(echo, LUMEN_INT_MAX_LEN) << "of " << hex(in.data(), len);
		return false;
	}
	lumen_int_opt back;
	if (lumen_int_parse(echo, static_cast<__u32>(elen), &back) != 0 || back.count != opt.count ||
	    back.slots != opt.count || back.flags != (LUMEN_INT_FLAG_ECHO | (opt.flags & LUMEN_INT_FLAG_OVERFLOW))) {
		ADD_FAILURE() << "echo does not parse back: " << hex(echo, static_cast<std::size_t>(elen));
		return false;
	}
	for (unsigned i = 0; i < opt.count; i++) {
		if (std::memcmp(&back.hops[i], &opt.hops[i], sizeof(lumen_int_hop)) != 0) {
			ADD_FAILURE() << "echo hop " << i << " differs for " << hex(in.data(), len);
			return false;
		}
	}
	return true;
}

/* push_hop on arbitrary bytes: writes only where documented. */
bool check_push(const Bytes &in, const lumen_int_hop &hop, Stats &st, Bytes *after)
{
	constexpr std::size_t guard = 48;
	const std::size_t n = in.size();
	constexpr std::size_t max_input = 320;
	if (n > max_input) {
		ADD_FAILURE() << "input longer than the push_hop test area: " << n;
		return false;
	}
	std::array<std::uint8_t, guard + max_input + guard> area;
	area.fill(0xC3);
	for (std::size_t i = 0; i < n; i++)
		area[guard + i] = in[i];
	std::uint8_t *buf = area.data() + guard;
	const int rc = lumen_int_push_hop(buf, static_cast<__u32>(n), &hop);
	for (std::size_t i = 0; i < area.size(); i++) {
		if ((i < guard || i >= guard + n) && area[i] != 0xC3) {
			ADD_FAILURE() << "push_hop wrote outside [buf, buf + len) for " << hex(in.data(), n);
			return false;
		}
	}
	after->assign(buf, buf + n);

	/* Expected behaviour, from the documentation. */
	const bool request = n >= 5 && in[0] == 253 && in[1] >= 5 && in[1] <= 40 && in[1] <= n &&
			     (in[1] - 5) % 7 == 0 && !(in[4] & 0x10);
	Bytes expect = in;
	if (!request) {
		if (rc != -LUMEN_INT_EINVAL || *after != in) {
			ADD_FAILURE() << "push_hop on a non-request: rc " << rc << " for " << hex(in.data(), n);
			return false;
		}
		st.push_refused++;
		return true;
	}
	const unsigned slots = (in[1] - 5u) / 7, count = in[4] & 7u;
	if (count >= slots) {
		expect[4] |= 0x08;
		if (rc != -LUMEN_INT_EFULL || *after != expect) {
			ADD_FAILURE() << "push_hop on a full request: rc " << rc << " for " << hex(in.data(), n);
			return false;
		}
		st.push_full++;
		return true;
	}
	lumen_int_hop_pack(&hop, expect.data() + 5 + 7 * count);
	const std::uint8_t hdr = (*after)[4];
	bool ok = rc == static_cast<int>(count) && (hdr & 0x1F) == ((in[4] & 0x18) | (count + 1)) &&
		  ((hdr >> 5) == 1 || (hdr >> 5) == (in[4] >> 5));
	expect[4] = hdr;
	if (!ok || *after != expect) {
		ADD_FAILURE() << "push_hop into slot " << count << ": rc " << rc << " for " << hex(in.data(), n)
			      << " gave " << hex(after->data(), n);
		return false;
	}
	st.push_ok++;
	return true;
}

/* ---------------------------------------------------------------------- */
/* Generators                                                              */

std::vector<__u16> valid_codes()
{
	std::vector<__u16> v;
	for (unsigned c = 0; c < 1024; c++)
		if (lumen_doc_rate_valid(c))
			v.push_back(static_cast<__u16>(c));
	return v;
}

lumen_int_hop random_hop(Rng &rng, const std::vector<__u16> &codes)
{
	lumen_int_hop h;
	if (rng.chance(80)) {
		lumen_int_hop_make(&h, rng.next(), rng.next(), rng.next() >> rng.below(64),
				   codes[rng.below(codes.size())]);
	} else {
		/* Raw fields, rate possibly malformed. */
		h.rate = static_cast<__u16>(rng.below(1024));
		h.ts = static_cast<__u32>(rng.below(1u << 18));
		h.tx = static_cast<__u16>(rng.below(1u << 14));
		h.qlen = static_cast<__u16>(rng.below(1u << 14));
		h.pad = 0;
	}
	return h;
}

/* A valid request or echo, built with the library's own writers. */
Bytes valid_option(Rng &rng, const std::vector<__u16> &codes)
{
	const bool echo = rng.chance(40);
	const unsigned slots = static_cast<unsigned>(echo ? rng.below(6) : 1 + rng.below(5));
	std::uint8_t req[LUMEN_INT_MAX_LEN];
	const unsigned req_slots = echo ? (slots ? slots : 1) : slots;
	lumen_int_write_request(req, sizeof(req), req_slots);
	const unsigned fill = echo ? slots : static_cast<unsigned>(rng.below(slots + 1));
	for (unsigned i = 0; i < fill; i++) {
		lumen_int_hop h;
		lumen_int_hop_make(&h, rng.next(), rng.next(), rng.next() >> rng.below(64),
				   codes[rng.below(codes.size())]);
		lumen_int_push_hop(req, sizeof(req), &h);
	}
	const unsigned req_len = LUMEN_INT_OPT_LEN(req_slots);
	if (!echo && rng.chance(30)) /* junk in the unfilled slots */
		for (unsigned i = LUMEN_INT_OPT_LEN(fill); i < req_len; i++)
			req[i] = rng.byte();
	if (rng.chance(15)) {
		lumen_int_hop h = random_hop(rng, codes);
		lumen_int_push_hop(req, sizeof(req), &h); /* may overflow: O */
	}
	if (!echo)
		return Bytes(req, req + req_len);
	lumen_int_opt o;
	if (lumen_int_parse(req, req_len, &o) != 0)
		return Bytes(req, req + req_len);
	std::uint8_t e[LUMEN_INT_MAX_LEN];
	int elen = lumen_int_write_echo(e, sizeof(e), &o);
	return Bytes(e, e + (elen > 0 ? elen : 0));
}

/*
 * An option as a format with more than 5 hop slots would send it: 6..8 slots
 * (length 47, 54, 61), sometimes up to 35 (length 250), hops made by the
 * library, a request or a full echo; sometimes other options follow.
 */
Bytes long_option(Rng &rng, const std::vector<__u16> &codes)
{
	const unsigned slots = static_cast<unsigned>(rng.chance(90) ? 6 + rng.below(3) : 9 + rng.below(27));
	const bool echo = rng.chance(40);
	const unsigned count = echo ? (slots & 7) : static_cast<unsigned>(rng.below(8));
	Bytes b(5 + 7 * slots, 0);
	b[0] = 253;
	b[1] = static_cast<std::uint8_t>(5 + 7 * slots);
	b[2] = 0x4C;
	b[3] = 0x55;
	b[4] = static_cast<std::uint8_t>(0x20 | (echo ? 0x10 : 0) | (rng.chance(10) ? 0x08 : 0) | count);
	for (unsigned i = 0; i < slots; i++) {
		if (!echo && i >= count && rng.chance(70))
			continue; /* empty slot */
		const lumen_int_hop h = random_hop(rng, codes);
		lumen_int_hop_pack(&h, b.data() + 5 + 7 * i);
	}
	if (rng.chance(30))
		for (std::uint64_t i = 0, k = 1 + rng.below(16); i < k; i++)
			b.push_back(rng.byte());
	return b;
}

void mutate(Rng &rng, Bytes &b, const std::vector<__u16> &codes)
{
	static const std::uint8_t lengths[] = {0, 1, 2, 3, 4, 5, 6, 11, 12, 13, 19, 26, 33, 39, 40, 41, 47, 54, 255};
	switch (rng.below(11)) {
	case 0: /* flip a bit */
	case 1:
		if (!b.empty())
			b[rng.below(b.size())] ^= static_cast<std::uint8_t>(1u << rng.below(8));
		break;
	case 2: /* length byte */
		if (b.size() > 1) {
			if (rng.chance(50))
				b[1] = lengths[rng.below(sizeof(lengths))];
			else
				b[1] = static_cast<std::uint8_t>(b[1] +
								 (rng.chance(50) ? 1 : -1) * (rng.chance(50) ? 1 : 7));
		}
		break;
	case 3: /* count */
		if (b.size() > 4)
			b[4] = static_cast<std::uint8_t>((b[4] & ~7u) | rng.below(8));
		break;
	case 4: /* version */
		if (b.size() > 4)
			b[4] = static_cast<std::uint8_t>((b[4] & 0x1Fu) | (rng.below(8) << 5));
		break;
	case 5: /* E or O */
		if (b.size() > 4)
			b[4] ^= rng.chance(50) ? 0x10 : 0x08;
		break;
	case 6: /* truncate */
		if (!b.empty())
			b.resize(rng.below(b.size()));
		break;
	case 7: /* trailing bytes (more options follow) */
		for (std::uint64_t i = 0, k = 1 + rng.below(24); i < k; i++)
			b.push_back(rng.byte());
		break;
	case 8: /* a hop's rate code */
		if (b.size() >= 12) {
			unsigned slot = static_cast<unsigned>(rng.below((b.size() - 5) / 7));
			unsigned c = rng.chance(50) ? static_cast<unsigned>(rng.below(1024))
						    : codes[rng.below(codes.size())];
			b[5 + 7 * slot] = static_cast<std::uint8_t>(c >> 2);
			b[6 + 7 * slot] = static_cast<std::uint8_t>((b[6 + 7 * slot] & 0x3F) | ((c & 3) << 6));
		}
		break;
	case 9: /* kind or ExID */
		if (b.size() > 3)
			b[rng.below(4) == 0 ? 0 : 2 + rng.below(2)] = rng.byte();
		break;
	default: /* random byte */
		if (!b.empty())
			b[rng.below(b.size())] = rng.byte();
		break;
	}
}

Bytes random_input(Rng &rng)
{
	Bytes b(rng.below(65));
	for (auto &x : b)
		x = rng.byte();
	if (b.size() >= 5 && rng.chance(50)) {
		/* A plausible header over random hops. */
		b[0] = 253;
		if (rng.chance(70))
			b[1] = static_cast<std::uint8_t>(5 + 7 * rng.below(9)); /* 0..8 slots */
		b[2] = 0x4C;
		b[3] = 0x55;
		if (rng.chance(70))
			b[4] = static_cast<std::uint8_t>((b[4] & 0x1F) | 0x20);
	}
	return b;
}

TEST(IntOptionFuzz, ParserAndPushHop)
{
	constexpr std::uint64_t kIterations = 1000000;
	Rng rng(0x4C55'0001);
	const std::vector<__u16> codes = valid_codes();
	ASSERT_EQ(codes.size(), 653u);
	Stats st;
	std::uint64_t mutated = 0, random = 0, pristine = 0, oversized = 0;
	const auto t0 = std::chrono::steady_clock::now();
	Bytes after;
	for (std::uint64_t it = 0; it < kIterations; it++) {
		Bytes in;
		const std::uint64_t kind = rng.below(100);
		if (kind < 30) {
			in = random_input(rng);
			random++;
		} else if (kind < 36) {
			/* 6+ slots; as such, or mutated like the valid options. */
			in = long_option(rng, codes);
			oversized++;
			if (rng.chance(50))
				for (std::uint64_t m = 0, k = 1 + rng.below(2); m < k; m++)
					mutate(rng, in, codes);
		} else {
			in = valid_option(rng, codes);
			if (kind < 46) {
				pristine++;
			} else {
				for (std::uint64_t m = 0, k = 1 + rng.below(3); m < k; m++)
					mutate(rng, in, codes);
				mutated++;
			}
		}
		ASSERT_TRUE(check_parse(in, st)) << "iteration " << it;
		const lumen_int_hop hop = random_hop(rng, codes);
		ASSERT_TRUE(check_push(in, hop, st, &after)) << "iteration " << it;
		/* The pushed-into buffer is one more parser input. */
		if (after != in) {
			ASSERT_TRUE(check_parse(after, st)) << "iteration " << it << " (after push)";
		}
	}
	const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	std::printf("int_option fuzz: %llu parser inputs (%llu random, %llu valid, %llu mutated, %llu with 6+ slots, "
		    "%llu after push), "
		    "%llu accepted (%llu echoes); push_hop ok %llu full %llu refused %llu; %.2f s\n",
		    (unsigned long long)st.inputs, (unsigned long long)random, (unsigned long long)pristine,
		    (unsigned long long)mutated, (unsigned long long)oversized,
		    (unsigned long long)(st.inputs - kIterations), (unsigned long long)st.accepted,
		    (unsigned long long)st.echoes, (unsigned long long)st.push_ok, (unsigned long long)st.push_full,
		    (unsigned long long)st.push_refused, secs);
	for (int e = 1; e < LUMEN_INT_ERROR_COUNT; e++)
		if (st.by_error[static_cast<std::size_t>(e)])
			std::printf("  %-40s %llu\n", lumen_int_strerror(e),
				    (unsigned long long)st.by_error[static_cast<std::size_t>(e)]);
	std::printf("  EVERSION with a later error also present: %llu\n", (unsigned long long)st.version_first);
	RecordProperty("parser_inputs", static_cast<int>(st.inputs));

	/* The generator must reach every parser outcome, deep ones included. */
	EXPECT_GE(st.inputs, kIterations);
	EXPECT_GT(st.accepted, kIterations / 5);
	EXPECT_GT(st.echoes, kIterations / 20);
	for (int e : {LUMEN_INT_ETRUNCATED, LUMEN_INT_EKIND, LUMEN_INT_ELENGTH, LUMEN_INT_EEXID, LUMEN_INT_EVERSION,
		      LUMEN_INT_EHOPS, LUMEN_INT_ECOUNT, LUMEN_INT_ERATE})
		EXPECT_GT(st.by_error[static_cast<std::size_t>(e)], 1000u) << lumen_int_strerror(e);
	/* Encoder / switch errors are never parse results. */
	for (int e : {LUMEN_INT_ENOSPACE, LUMEN_INT_EFULL, LUMEN_INT_EINVAL})
		EXPECT_EQ(st.by_error[static_cast<std::size_t>(e)], 0u) << lumen_int_strerror(e);
	EXPECT_GT(st.version_first, 1000u);
	EXPECT_GT(st.push_ok, kIterations / 10);
	EXPECT_GT(st.push_full, 10000u);
	EXPECT_GT(st.push_refused, kIterations / 10);
}

} // namespace

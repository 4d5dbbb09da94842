// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Seeded random ("fuzz") test of the INT option parser, echo writers and
 * switch-side push (include/lumen/int_option.h), versions 1 and 2.
 * Deterministic: a fixed seed and a self-contained generator, so a failure
 * reproduces exactly.
 *
 * Inputs, of either version: purely random buffers (length 0..64), random
 * buffers with a plausible header, options with more hop records than the
 * version allows (version 1: 6 or more, lengths 47, 54, ...; version 2: 4 or
 * more, lengths 42, 51, ...), and mutations of valid requests, full and
 * partial echoes and of those long options (flipped bits, changed
 * length/count/version/flag bytes, version 2's First/Hops byte, bad rate
 * codes, truncation, trailing bytes). Every input is handed to the parser
 * in a heap buffer of exactly its length, so the ASan build catches any read
 * past the end.
 *
 * Checked for every input, against an independent oracle written from the
 * documentation (tests/int_option_oracle.h):
 *   - parse fails with exactly the error of the first documented check the
 *     input fails, and leaves the output untouched; or it succeeds exactly
 *     when the oracle accepts, reporting every field (version, flags, slots,
 *     count, First, Hops, every record, cleared slots) as the oracle decodes
 *     them bit by bit, and re-encoding the result reproduces the accepted
 *     bytes;
 *   - for an accepted option: its whole echo, an echo of a random range of
 *     its records (refused in version 1 unless whole, and outside the filled
 *     records) into a buffer of random size, and lumen_int_write_echo_fit
 *     into a buffer of random size (the whole echo, or in version 2 the
 *     bottleneck record alone) are the oracle's bytes or its error, write
 *     nothing past their length (nothing at all when they refuse), and parse
 *     back to the records they carry;
 *   - lumen_int_push_hop on the same (arbitrary) bytes does what the oracle
 *     says, writes only inside the option, and nothing at all when it
 *     refuses.
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
#include <string>
#include <vector>

namespace
{

using Bytes = std::vector<std::uint8_t>;

using lumen::test::Rng;

/* ---------------------------------------------------------------------- */
/* Checks                                                                  */

/* Per version: index 1 and 2; index 0 for inputs of no version this code speaks. */
using PerVersion = std::array<std::uint64_t, 3>;

struct Stats {
	std::uint64_t inputs = 0;
	PerVersion accepted{}, echoes{};
	std::uint64_t partial_echoes = 0; /* version 2, fewer records than Hops */
	std::array<PerVersion, LUMEN_INT_ERROR_COUNT> by_error{};
	/* EVERSION where, with version 1, a later check would have failed. */
	std::uint64_t version_first = 0;
	/* version 2 ECOUNT caused by byte 5 alone (First/Hops, or non-zero in a request) */
	std::uint64_t byte5_refused = 0;
	PerVersion push_ok{}, push_full{};
	std::uint64_t push_refused = 0;
	PerVersion range_ok{}, range_refused{}, fit_whole{}, fit_nospace{};
	std::uint64_t fit_partial = 0;
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

/* The version an input claims (1 or 2), or 0. */
unsigned input_version(const std::uint8_t *p, std::size_t n)
{
	const unsigned v = n >= 5 ? p[4] >> 5 : 0;
	return lumen_doc_version_known(v) ? v : 0;
}

bool same_opt(const lumen_int_opt &a, const lumen_int_opt &b)
{
	if (a.version != b.version || a.flags != b.flags || a.slots != b.slots || a.count != b.count ||
	    a.first_hop != b.first_hop || a.path_hops != b.path_hops || a.pad[0] != b.pad[0] || a.pad[1] != b.pad[1])
		return false;
	for (unsigned i = 0; i < LUMEN_INT_MAX_HOPS; i++)
		if (!lumen_doc_hop_equal(&a.hops[i], &b.hops[i]))
			return false;
	return true;
}

/* A buffer size for an echo writer: mostly around the lengths that matter. */
std::uint32_t echo_buf_len(Rng &rng, unsigned whole)
{
	static const std::uint32_t sizes[] = {0, 5, 6, 14, 15, 16, 23, 24, 25, 28, 32, 33, 40};
	switch (rng.below(3)) {
	case 0:
		return sizes[rng.below(sizeof(sizes) / sizeof(sizes[0]))];
	case 1: /* whole - 1 .. whole + 1 */
		return whole > 0 ? static_cast<std::uint32_t>(whole - 1 + rng.below(3)) : 0;
	default:
		return static_cast<std::uint32_t>(rng.below(41));
	}
}

/*
 * An echo writer's output against the oracle: same result; on success the
 * expected bytes and nothing written past them, on refusal nothing written
 * at all (guard bytes after buf_len included).
 */
bool check_written(const char *what, int rc, int want, const std::uint8_t *got, const std::uint8_t *expect,
		   std::size_t area, const lumen_int_opt &req)
{
	const std::size_t written = rc > 0 ? static_cast<std::size_t>(rc) : 0;
	bool ok = rc == want && (rc <= 0 || std::memcmp(got, expect, written) == 0);
	for (std::size_t i = written; ok && i < area; i++)
		ok = got[i] == 0xEE;
	if (!ok)
		ADD_FAILURE() << what << ": rc " << rc << ", expected " << want << "; wrote " << hex(got, area)
			      << "expected " << hex(expect, written) << "(version " << unsigned(req.version)
			      << ", count " << unsigned(req.count) << ")";
	return ok;
}

/* An echo the writer made parses back, carrying records first.. of req. */
bool check_echo_parses(const std::uint8_t *echo, int len, const lumen_int_opt &req, unsigned first, unsigned count)
{
	lumen_int_opt back;
	const int rc = lumen_int_parse(echo, static_cast<__u32>(len), &back);
	bool ok = rc == 0 && back.version == req.version &&
		  back.flags == (LUMEN_INT_FLAG_ECHO | (req.flags & LUMEN_INT_FLAG_OVERFLOW)) && back.slots == count &&
		  back.count == count && back.first_hop == (req.version == 2 ? first : 0) &&
		  back.path_hops == (req.version == 2 ? req.count : count);
	for (unsigned i = 0; ok && i < count; i++)
		ok = lumen_doc_hop_equal(&back.hops[i], &req.hops[first + i]);
	if (!ok)
		ADD_FAILURE() << "echo does not parse back (rc " << rc
			      << "): " << hex(echo, static_cast<std::size_t>(len));
	return ok;
}

/* The echoes of an accepted option: whole, a random range, and what fits. */
bool check_echoes(const lumen_int_opt &opt, Rng &rng, Stats &st)
{
	constexpr std::size_t area = LUMEN_INT_MAX_LEN + 8;
	std::uint8_t got[area], expect[LUMEN_INT_MAX_LEN];
	const unsigned ver = opt.version;

	/* Whole. */
	std::memset(got, 0xEE, sizeof(got));
	int want = lumen_doc_echo_range(&opt, 0, opt.count, LUMEN_INT_MAX_LEN, expect);
	int rc = lumen_int_write_echo(got, LUMEN_INT_MAX_LEN, &opt);
	if (!check_written("write_echo", rc, want, got, expect, area, opt))
		return false;
	if (rc > 0 && !check_echo_parses(got, rc, opt, 0, opt.count))
		return false;
	const unsigned whole = rc > 0 ? static_cast<unsigned>(rc) : 0;

	/* A range, often outside the filled records; a buffer of random size. */
	const unsigned first = static_cast<unsigned>(rng.below(opt.count + 2u));
	const unsigned count = static_cast<unsigned>(rng.chance(60) ? 1 : rng.below(opt.count + 2u));
	const lumen_doc_layout layout = lumen_doc_layout_of(ver);
	std::uint32_t buf_len = echo_buf_len(rng, layout.hdr + layout.rec * count);
	std::memset(got, 0xEE, sizeof(got));
	want = lumen_doc_echo_range(&opt, first, count, buf_len, expect);
	rc = lumen_int_write_echo_range(got, buf_len, &opt, first, count);
	if (!check_written("write_echo_range", rc, want, got, expect, area, opt)) {
		ADD_FAILURE() << "range " << first << " + " << count << ", buffer " << buf_len;
		return false;
	}
	if (rc > 0 && !check_echo_parses(got, rc, opt, first, count))
		return false;
	(rc > 0 ? st.range_ok : st.range_refused)[ver]++;

	/* What fits in a buffer of random size. */
	buf_len = echo_buf_len(rng, whole);
	unsigned allowed = 0;
	std::memset(got, 0xEE, sizeof(got));
	want = lumen_doc_echo_fit(&opt, buf_len, expect, &allowed);
	rc = lumen_int_write_echo_fit(got, buf_len, &opt);
	if (want > 0 && allowed != 0 && rc == want) {
		/* A partial echo: a bottleneck record, its index in First. */
		const unsigned chosen = got[5] >> 4;
		if (chosen >= 5 || !(allowed & (1u << chosen))) {
			ADD_FAILURE() << "write_echo_fit chose record " << chosen << ", allowed mask " << allowed
				      << ": " << hex(got, area);
			return false;
		}
		want = lumen_doc_echo_range(&opt, chosen, 1, buf_len, expect);
		st.fit_partial++;
	} else if (want > 0) {
		st.fit_whole[ver]++;
	} else {
		st.fit_nospace[ver] += want == -LUMEN_INT_ENOSPACE;
	}
	if (!check_written("write_echo_fit", rc, want, got, expect, area, opt)) {
		ADD_FAILURE() << "buffer " << buf_len;
		return false;
	}
	if (rc > 0 && !check_echo_parses(got, rc, opt, ver == 2 ? got[5] >> 4 : 0u, got[4] & 7u))
		return false;
	return true;
}

/* Parse one input; returns false (after recording a failure) on a violation. */
bool check_parse(const Bytes &in, Rng &rng, Stats &st)
{
	const std::size_t n = in.size();
	/* Exactly n bytes on the heap: any over-read is an ASan report. */
	std::unique_ptr<std::uint8_t[]> buf(new std::uint8_t[n]);
	if (n)
		std::memcpy(buf.get(), in.data(), n);
	lumen_int_opt expect;
	const int want = lumen_doc_parse(buf.get(), n, &expect);
	const unsigned ver = input_version(in.data(), n);

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
		st.by_error[static_cast<std::size_t>(-rc)][ver]++;
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
			st.version_first += lumen_doc_parse_outcome(v1.data(), n) != 0;
		}
		if (want == LUMEN_INT_ECOUNT && ver == 2) {
			/* Would the option pass with a plain byte 5 (request 0, echo 0 | count)? */
			Bytes plain = in;
			plain[5] = (in[4] & LUMEN_INT_FLAG_ECHO) ? static_cast<std::uint8_t>(in[4] & 7) : 0;
			st.byte5_refused += lumen_doc_parse_outcome(plain.data(), n) != LUMEN_INT_ECOUNT;
		}
		return true;
	}
	if (want != 0) {
		ADD_FAILURE() << "accepted, expected error " << -want << " (" << lumen_int_strerror(want) << ") for "
			      << hex(in.data(), n);
		return false;
	}
	st.accepted[ver]++;
	const bool is_echo = opt.flags & LUMEN_INT_FLAG_ECHO;
	st.echoes[ver] += is_echo;
	st.partial_echoes += is_echo && ver == 2 && opt.count < opt.path_hops;
	if (!same_opt(opt, expect)) {
		ADD_FAILURE() << "parse result differs from the documented decoding for " << hex(in.data(), n);
		return false;
	}

	/* Re-encode the whole option: header plus every record present. */
	const unsigned len = in[1];
	/* room for 5 records of either size: the compiler cannot tell that slots fit the version */
	std::uint8_t re[LUMEN_INT_V2_OPT_LEN(LUMEN_INT_MAX_HOPS) + 8];
	std::memset(re, 0xEE, sizeof(re));
	const std::uint8_t byte5 = is_echo ? static_cast<std::uint8_t>(opt.first_hop << 4 | opt.path_hops) : 0;
	lumen_int_write_hdr_v(re, opt.version, opt.slots, opt.flags, opt.count, byte5);
	for (unsigned i = 0; i < opt.slots && i < LUMEN_INT_MAX_HOPS; i++)
		lumen_int_hop_pack_v(&opt.hops[i], opt.version,
				     re + lumen_int_hdr_len(opt.version) + lumen_int_hop_len(opt.version) * i);
	if (std::memcmp(re, in.data(), len) != 0 || re[len] != 0xEE) {
		ADD_FAILURE() << "re-encoding differs: " << hex(re, len + 1) << "vs " << hex(in.data(), len);
		return false;
	}
	return check_echoes(opt, rng, st);
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

	Bytes expect(n);
	const int want = lumen_doc_push(in.data(), n, &hop, expect.data());
	if (rc != want || *after != expect) {
		ADD_FAILURE() << "push_hop: rc " << rc << ", expected " << want << ", for " << hex(in.data(), n)
			      << "gave " << hex(after->data(), n) << "expected " << hex(expect.data(), n);
		return false;
	}
	const unsigned ver = input_version(in.data(), n);
	if (rc >= 0)
		st.push_ok[ver]++;
	else if (rc == -LUMEN_INT_EFULL)
		st.push_full[ver]++;
	else
		st.push_refused++;
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

unsigned hdr_len(unsigned ver)
{
	return lumen_doc_layout_of(ver).hdr;
}

unsigned rec_len(unsigned ver)
{
	return lumen_doc_layout_of(ver).rec;
}

lumen_int_hop random_hop(Rng &rng, const std::vector<__u16> &codes, unsigned ver)
{
	lumen_int_hop h;
	if (rng.chance(80)) {
		lumen_int_hop_make_v(&h, ver, rng.next(), rng.next(), rng.next() >> rng.below(64),
				     codes[rng.below(codes.size())]);
	} else {
		/* Raw fields of the version's widths, rate possibly malformed. */
		const lumen_doc_layout l = lumen_doc_layout_of(ver);
		h.rate = static_cast<__u16>(rng.below(1024));
		h.ts = static_cast<__u32>(rng.below(1ull << l.ts_bits));
		h.tx = static_cast<__u32>(rng.below(1ull << l.tx_bits));
		h.qlen = static_cast<__u16>(rng.below(1u << 14));
		h.pad = 0;
	}
	return h;
}

/*
 * A valid request or echo of version ver, built with the library's own
 * writers; version 2 echoes are whole, a range, or what fits a random
 * buffer (the bottleneck record when the whole does not).
 */
Bytes valid_option(Rng &rng, const std::vector<__u16> &codes, unsigned ver)
{
	const unsigned max_slots = lumen_doc_layout_of(ver).max_slots;
	const bool echo = rng.chance(40);
	const unsigned slots = static_cast<unsigned>(echo ? rng.below(max_slots + 1) : 1 + rng.below(max_slots));
	std::uint8_t req[LUMEN_INT_MAX_LEN];
	const unsigned req_slots = echo ? (slots ? slots : 1) : slots;
	const int req_len = lumen_int_write_request_v(req, sizeof(req), ver, req_slots);
	if (req_len <= 0) {
		ADD_FAILURE() << "write_request_v(" << ver << ", " << req_slots << "): " << req_len;
		return Bytes();
	}
	const unsigned fill = echo ? slots : static_cast<unsigned>(rng.below(slots + 1));
	for (unsigned i = 0; i < fill; i++) {
		lumen_int_hop h;
		/* mostly few rates, so that equal queueing delays (bottleneck ties) occur */
		const __u16 rate = rng.chance(50) ? codes[rng.below(codes.size())]
						  : lumen_int_rate_encode(rng.chance(50) ? 10000 : 25000);
		const std::uint64_t qlen = rng.chance(20) ? rng.below(4) << 12 : rng.next() >> rng.below(64);
		lumen_int_hop_make_v(&h, ver, rng.next(), rng.next(), qlen, rate);
		lumen_int_push_hop(req, sizeof(req), &h);
	}
	if (!echo && rng.chance(30)) /* junk in the unfilled slots */
		for (unsigned i = hdr_len(ver) + rec_len(ver) * fill; i < static_cast<unsigned>(req_len); i++)
			req[i] = rng.byte();
	if (rng.chance(15)) {
		lumen_int_hop h = random_hop(rng, codes, ver);
		lumen_int_push_hop(req, sizeof(req), &h); /* may overflow: O */
	}
	if (!echo)
		return Bytes(req, req + req_len);
	lumen_int_opt o;
	if (lumen_int_parse(req, static_cast<__u32>(req_len), &o) != 0)
		return Bytes(req, req + req_len);
	std::uint8_t e[LUMEN_INT_MAX_LEN];
	int elen;
	if (ver == 2 && o.count > 0 && rng.chance(70)) {
		if (rng.chance(50)) {
			const unsigned first = static_cast<unsigned>(rng.below(o.count));
			const unsigned count = 1 + static_cast<unsigned>(rng.below(o.count - first));
			elen = lumen_int_write_echo_range(e, sizeof(e), &o, first, count);
		} else {
			elen = lumen_int_write_echo_fit(e, static_cast<__u32>(15 + rng.below(26)), &o);
		}
	} else {
		elen = lumen_int_write_echo(e, sizeof(e), &o);
	}
	return Bytes(e, e + (elen > 0 ? elen : 0));
}

/*
 * An option as a format with more hop slots would send it, in the layout of
 * version ver: version 1 with 6..8 records (length 47, 54, 61), sometimes up
 * to 35 (length 250); version 2 with 4 or 5 (length 42, 51), sometimes up to
 * 27 (length 249). Hops made by the library, a request or a full echo;
 * sometimes other options follow.
 */
Bytes long_option(Rng &rng, const std::vector<__u16> &codes, unsigned ver)
{
	const unsigned hdr = hdr_len(ver), rec = rec_len(ver);
	const unsigned first_long = lumen_doc_layout_of(ver).max_slots + 1, last_long = (255 - hdr) / rec;
	const unsigned slots = static_cast<unsigned>(
		rng.chance(90) ? first_long + rng.below(3) : first_long + 3 + rng.below(last_long - first_long - 2));
	const bool echo = rng.chance(40);
	const unsigned count = echo ? (slots & 7) : static_cast<unsigned>(rng.below(8));
	Bytes b(hdr + rec * slots, 0);
	b[0] = 253;
	b[1] = static_cast<std::uint8_t>(hdr + rec * slots);
	b[2] = 0x4C;
	b[3] = 0x55;
	b[4] = static_cast<std::uint8_t>(ver << 5 | (echo ? 0x10 : 0) | (rng.chance(10) ? 0x08 : 0) | count);
	if (ver == 2 && echo)
		b[5] = static_cast<std::uint8_t>(rng.chance(70) ? count & 15 : rng.byte());
	for (unsigned i = 0; i < slots; i++) {
		if (!echo && i >= count && rng.chance(70))
			continue; /* empty slot */
		const lumen_int_hop h = random_hop(rng, codes, ver);
		lumen_int_hop_pack_v(&h, ver, b.data() + hdr + rec * i);
	}
	if (rng.chance(30))
		for (std::uint64_t i = 0, k = 1 + rng.below(16); i < k; i++)
			b.push_back(rng.byte());
	return b;
}

void mutate(Rng &rng, Bytes &b, const std::vector<__u16> &codes)
{
	/* both versions' lengths and their neighbours: 5 + 7n, 6 + 9n, the 40-byte limit */
	static const std::uint8_t lengths[] = {0,  1,  2,  3,  4,  5,  6,  7,  11, 12, 13, 14, 15, 16, 19, 23,
					       24, 25, 26, 32, 33, 34, 39, 40, 41, 42, 47, 51, 54, 60, 255};
	const unsigned ver = b.size() > 4 && (b[4] >> 5) == 2 ? 2 : 1; /* the layout the bytes claim */
	switch (rng.below(12)) {
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
				b[1] = static_cast<std::uint8_t>(
					b[1] + (rng.chance(50) ? 1 : -1) * (rng.chance(50) ? 1 : int(rec_len(ver))));
		}
		break;
	case 3: /* count */
		if (b.size() > 4)
			b[4] = static_cast<std::uint8_t>((b[4] & ~7u) | rng.below(8));
		break;
	case 4: /* version, often the other known one */
		if (b.size() > 4)
			b[4] = static_cast<std::uint8_t>((b[4] & 0x1Fu) |
							 ((rng.chance(50) ? 3 - ver : rng.below(8)) << 5));
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
		if (b.size() >= hdr_len(ver) + rec_len(ver)) {
			const unsigned at = hdr_len(ver) +
					    rec_len(ver) * static_cast<unsigned>(
								   rng.below((b.size() - hdr_len(ver)) / rec_len(ver)));
			const unsigned c = rng.chance(50) ? static_cast<unsigned>(rng.below(1024))
							  : codes[rng.below(codes.size())];
			lumen_doc_put_bits(&b[at], 0, 10, c);
		}
		break;
	case 9: /* kind or ExID */
		if (b.size() > 3)
			b[rng.below(4) == 0 ? 0 : 2 + rng.below(2)] = rng.byte();
		break;
	case 10: /* version 2's First / Hops byte (in version 1: the first hop's rate) */
		if (b.size() > 5) {
			if (rng.chance(50))
				b[5] = static_cast<std::uint8_t>(rng.below(5) << 4 | rng.below(5));
			else
				b[5] = rng.byte();
		}
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
	if (b.size() >= 6 && rng.chance(50)) {
		/* A plausible header over random hops, of either version. */
		const unsigned ver = rng.chance(50) ? 1 : 2;
		b[0] = 253;
		if (rng.chance(70))
			b[1] = static_cast<std::uint8_t>(hdr_len(ver) + rec_len(ver) * rng.below(ver == 2 ? 6 : 9));
		b[2] = 0x4C;
		b[3] = 0x55;
		if (rng.chance(70))
			b[4] = static_cast<std::uint8_t>((b[4] & 0x1F) | ver << 5);
		if (ver == 2 && rng.chance(50))
			b[5] = (b[4] & 0x10) ? static_cast<std::uint8_t>(b[5] & 0x33) : 0;
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
		const unsigned ver = rng.chance(50) ? 1 : 2;
		if (kind < 30) {
			in = random_input(rng);
			random++;
		} else if (kind < 36) {
			/* more records than the version allows; as such, or mutated like the valid options */
			in = long_option(rng, codes, ver);
			oversized++;
			if (rng.chance(50))
				for (std::uint64_t m = 0, k = 1 + rng.below(2); m < k; m++)
					mutate(rng, in, codes);
		} else {
			in = valid_option(rng, codes, ver);
			if (kind < 46) {
				pristine++;
			} else {
				for (std::uint64_t m = 0, k = 1 + rng.below(3); m < k; m++)
					mutate(rng, in, codes);
				mutated++;
			}
		}
		ASSERT_TRUE(check_parse(in, rng, st)) << "iteration " << it;
		const lumen_int_hop hop = random_hop(rng, codes, input_version(in.data(), in.size()) == 2 ? 2 : 1);
		ASSERT_TRUE(check_push(in, hop, st, &after)) << "iteration " << it;
		/* The pushed-into buffer is one more parser input. */
		if (after != in) {
			ASSERT_TRUE(check_parse(after, rng, st)) << "iteration " << it << " (after push)";
		}
	}
	const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	using ull = unsigned long long;
	std::printf("int_option fuzz: %llu parser inputs (%llu random, %llu valid, %llu mutated, %llu with too many "
		    "records, %llu after push); %.2f s\n",
		    ull(st.inputs), ull(random), ull(pristine), ull(mutated), ull(oversized),
		    ull(st.inputs - kIterations), secs);
	for (unsigned v = 1; v <= 2; v++)
		std::printf("  version %u: %llu accepted (%llu echoes); push_hop ok %llu full %llu; echo range ok %llu "
			    "refused %llu; echo_fit whole %llu no space %llu\n",
			    v, ull(st.accepted[v]), ull(st.echoes[v]), ull(st.push_ok[v]), ull(st.push_full[v]),
			    ull(st.range_ok[v]), ull(st.range_refused[v]), ull(st.fit_whole[v]),
			    ull(st.fit_nospace[v]));
	std::printf("  version 2 partial echoes accepted %llu, echo_fit partial %llu; push_hop refused %llu\n",
		    ull(st.partial_echoes), ull(st.fit_partial), ull(st.push_refused));
	for (int e = 1; e < LUMEN_INT_ERROR_COUNT; e++) {
		const PerVersion &c = st.by_error[static_cast<std::size_t>(e)];
		if (c[0] + c[1] + c[2])
			std::printf("  %-40s no version %8llu  v1 %8llu  v2 %8llu\n", lumen_int_strerror(e), ull(c[0]),
				    ull(c[1]), ull(c[2]));
	}
	std::printf("  EVERSION with a later error also present: %llu; version 2 ECOUNT from byte 5: %llu\n",
		    ull(st.version_first), ull(st.byte5_refused));
	RecordProperty("parser_inputs", static_cast<int>(st.inputs));

	/* The generator must reach every outcome of both versions, deep ones included. */
	EXPECT_GE(st.inputs, kIterations);
	for (unsigned v = 1; v <= 2; v++) {
		SCOPED_TRACE(testing::Message() << "version " << v);
		EXPECT_GT(st.accepted[v], kIterations / 10);
		EXPECT_GT(st.echoes[v], kIterations / 40);
		for (int e :
		     {LUMEN_INT_ETRUNCATED, LUMEN_INT_ELENGTH, LUMEN_INT_EHOPS, LUMEN_INT_ECOUNT, LUMEN_INT_ERATE})
			EXPECT_GT(st.by_error[static_cast<std::size_t>(e)][v], 1000u) << lumen_int_strerror(e);
		EXPECT_GT(st.push_ok[v], kIterations / 20);
		EXPECT_GT(st.push_full[v], 5000u);
		EXPECT_GT(st.range_ok[v], 10000u);
		EXPECT_GT(st.range_refused[v], 10000u);
		EXPECT_GT(st.fit_whole[v], 10000u);
		EXPECT_GT(st.fit_nospace[v], 10000u);
	}
	std::uint64_t by_error[LUMEN_INT_ERROR_COUNT] = {};
	for (int e = 0; e < LUMEN_INT_ERROR_COUNT; e++)
		for (std::uint64_t c : st.by_error[static_cast<std::size_t>(e)])
			by_error[e] += c;
	for (int e : {LUMEN_INT_EKIND, LUMEN_INT_EEXID, LUMEN_INT_EVERSION})
		EXPECT_GT(by_error[e], 1000u) << lumen_int_strerror(e);
	/* Encoder / switch errors are never parse results. */
	for (int e : {LUMEN_INT_ENOSPACE, LUMEN_INT_EFULL, LUMEN_INT_EINVAL})
		EXPECT_EQ(by_error[e], 0u) << lumen_int_strerror(e);
	EXPECT_GT(st.version_first, 1000u);
	EXPECT_GT(st.byte5_refused, 1000u);
	EXPECT_GT(st.partial_echoes, 5000u);
	EXPECT_GT(st.fit_partial, 10000u);
	EXPECT_GT(st.push_refused, kIterations / 10);
}

} // namespace

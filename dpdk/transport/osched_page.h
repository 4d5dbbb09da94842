/*
 * osched_page.h - lumend's shared-memory page (struct lumen_osched_page,
 * include/lumen/optical.h) as lumen-dp reads it: mapped read-only, read
 * under its seqlock, the tables copied when lumend publishes another
 * version and the quiet word each time it changes. What the optical gate
 * (transport/optical_gate.h) needs.
 *
 * A new schedule of another shape can make lumend's file grow (never
 * shrink, userspace/lumend/shm_page.h): when the header says the file is
 * longer than the mapping, the reader maps it again before it reads the
 * tables, and it never copies a table from beyond its mapping (a header
 * that says so makes it quiet). No DPDK here, only the file: tested
 * against lumend's own writer (tests/dp_osched_page_test.cpp).
 */
#ifndef LUMEN_DP_OSCHED_PAGE_H
#define LUMEN_DP_OSCHED_PAGE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "transport/optical_gate.h"

namespace lumen::dp
{

class OschedPage
{
      public:
	OschedPage() = default;
	~OschedPage();
	OschedPage(const OschedPage &) = delete;
	OschedPage &operator=(const OschedPage &) = delete;

	/* How often poll() checks staleness and the file (of its clock). */
	static constexpr uint64_t kCheckNs = 10'000'000;
	/* The stale limit when none is given: the kernel gate's default,
	 * lumen_osched_default_stale_ns (include/lumen/optical_wire.h): 4
	 * slots and never under 100 ms. */
	static uint64_t default_stale_ns(uint64_t slot_ns);

	/* Maps path; "" on success, else why not (no file, not a page, an ABI
	 * this build does not know). stale_ns: the stale limit (0: the
	 * default for the page's slots). */
	std::string open(const std::string &path, uint64_t stale_ns = 0);
	/* true when the page says something new since the last call (a
	 * version, the quiet word, a change's instant); then *t has it. A
	 * page being rewritten is read again next time; *t is only written
	 * with a whole read. */
	bool refresh(GateTables *t);
	/* refresh(), and check() once every kCheckNs of now_ns (any monotonic
	 * clock: the poll's); CLOCK_TAI is read only then. */
	bool poll(GateTables *t, uint64_t now_ns);
	/* Staleness at now_tai and a replaced file (above); true when *t's
	 * quiet word or tables changed. */
	bool check(uint64_t now_tai, GateTables *t);

	struct Stats {
		uint64_t stale = 0; /* spells of staleness */
		uint64_t reopened = 0; /* the path named another page: mapped again */
		uint64_t bad = 0; /* ... or something that is no page */
	};
	const Stats &stats() const
	{
		return st_;
	}
	/* Why the reader itself keeps quiet ("" when it does not). */
	const std::string &why() const
	{
		return why_;
	}
	/* Each warning line (stderr by default; tests catch them). */
	void on_warning(void (*fn)(const std::string &, void *), void *arg)
	{
		warn_ = fn;
		warn_arg_ = arg;
	}

	/* Bytes mapped (for tests: the page grew, the reader followed). */
	size_t mapped() const
	{
		return len_;
	}

      private:
	std::string map();
	bool read(uint32_t seq, GateTables *t);
	bool set_own(uint32_t bits, const std::string &why, GateTables *t);
	void warn(const std::string &line);

	std::string path_;
	const lumen_osched_page *pg_ = nullptr;
	size_t len_ = 0;
	uint64_t dev_ = 0, ino_ = 0; /* the file last mapped (or refused) */
	uint64_t stale_ns_ = 0; /* 0: default_stale_ns */
	uint64_t next_check_ = 0; /* poll(): the next check, on its clock */
	uint64_t since_ = 0; /* TAI: when this file was first checked */
	uint32_t own_ = 0; /* kQuietStale | kQuietPage: the reader's own reasons */
	bool force_tables_ = false; /* another file: read its tables whatever its version */
	uint32_t seq_ = 1; /* odd: nothing read yet */
	Stats st_;
	std::string why_;
	void (*warn_)(const std::string &, void *) = nullptr;
	void *warn_arg_ = nullptr;
	std::vector<uint16_t> scratch_; /* the tables being read; swapped in when whole */
};

} // namespace lumen::dp

#endif

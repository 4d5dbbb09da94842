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

	/* Maps path; "" on success, else why not (no file, not a page, an ABI
	 * this build does not know). */
	std::string open(const std::string &path);
	/* true when the page says something new since the last call (a
	 * version, the quiet word, a change's instant); then *t has it. A
	 * page being rewritten is read again next time; *t is only written
	 * with a whole read. */
	bool refresh(GateTables *t);

	/* Bytes mapped (for tests: the page grew, the reader followed). */
	size_t mapped() const
	{
		return len_;
	}

      private:
	std::string map();
	bool read(uint32_t seq, GateTables *t);

	std::string path_;
	const lumen_osched_page *pg_ = nullptr;
	size_t len_ = 0;
	uint32_t seq_ = 1; /* odd: nothing read yet */
	std::vector<uint16_t> scratch_; /* the tables being read; swapped in when whole */
};

} // namespace lumen::dp

#endif

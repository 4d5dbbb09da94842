/*
 * osched_page.h - lumend's shared-memory page (struct lumen_osched_page,
 * include/lumen/optical.h) as lumen-dp reads it: mapped read-only, read
 * under its seqlock, the tables copied when lumend publishes another
 * version and the quiet word each time it changes. What the optical gate
 * (transport/optical_gate.h) needs.
 */
#ifndef LUMEN_DP_OSCHED_PAGE_H
#define LUMEN_DP_OSCHED_PAGE_H

#include <cstddef>
#include <string>

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
	 * version, the quiet word); then *t has it. A page being rewritten is
	 * read again next time. */
	bool refresh(GateTables *t);

      private:
	std::string map();

	std::string path_;
	const lumen_osched_page *pg_ = nullptr;
	size_t len_ = 0;
	uint32_t seq_ = 1; /* odd: nothing read yet */
};

} // namespace lumen::dp

#endif

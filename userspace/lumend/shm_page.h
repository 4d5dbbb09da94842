// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/lumend/shm_page.h - the shared-memory file through which lumend
// tells the senders on its host (lumen-dp) where the schedule stands:
// struct lumen_osched_page (include/lumen/optical.h) and its two tables,
// for this host's node.
//
// Layout: the 128-byte header, then the waits table at waits_off, then the
// dsts table at dsts_off (each 64-byte aligned), the file rounded up to
// whole pages. The file is made in full under a temporary name and renamed
// into place, so whoever opens the path sees a complete page, never a
// half-written one. lumend holds an exclusive flock(2) on it while it runs:
// a second lumend on the same path is refused. On exit it says STOPPED and
// removes the file, unless somebody has replaced it since.
//
// Everything after creation is written under the header's seqlock by one
// thread, the slot engine's. A reader (optical.h's lumen_osched_read_*)
// copies what it needs between read_begin and read_retry and retries on a
// change, tables included. A new schedule of another shape can make the
// file grow (never shrink): a reader whose mapping is shorter than `size`
// remaps before it reads the tables. lumend maps the largest file any
// schedule can need up front (address space only), so growing it is one
// ftruncate and no remap on its side.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/fd.h"
#include "lumen/optical.h"
#include "sched/schedule.h"

namespace lumen::lumend
{

// One schedule's tables for one node, as the page holds them.
struct Tables {
	lumen_slot_timing timing = {};
	uint64_t version = 0;
	uint32_t self = 0, nodes = 0, uplinks = 0;
	uint32_t rate_mbps = 0;
	// waits[in_period * nodes + dst]: slots from in_period until one in
	// which self reaches dst on any uplink (0: that very slot);
	// LUMEN_SLOT_NEVER when none does, and always for dst == self
	std::vector<uint16_t> waits;
	// dsts[in_period * uplinks + p]: where self's uplink p leads (self: idle)
	std::vector<uint16_t> dsts;
};

// UsageError when self is no node or the period is beyond what 16-bit waits
// hold (LUMEN_SLOT_MAX_PERIOD).
Tables build_tables(const sched::Schedule &s, uint32_t self);

struct Layout {
	uint32_t waits_off = 0, dsts_off = 0;
	uint64_t size = 0; // of the file, whole pages
};
Layout layout_for(uint32_t nodes, uint32_t uplinks, uint32_t period);

class ShmPage
{
      public:
	// Makes the file at path (mode 0644) holding the header and tables;
	// Error when another lumend holds it or it cannot be made.
	static ShmPage create(const std::string &path, const Tables &t, uint64_t margin_ns, uint32_t quiet);
	// The same page in anonymous memory: lumend --measure without --shm.
	static ShmPage anonymous(const Tables &t, uint64_t margin_ns, uint32_t quiet);
	ShmPage(ShmPage &&o) noexcept;
	ShmPage &operator=(ShmPage &&) = delete;
	ShmPage(const ShmPage &) = delete;
	~ShmPage(); // unmaps (and removes the file, when remove_on_close)

	const lumen_osched_page *page() const
	{
		return pg_;
	}
	const std::string &path() const
	{
		return path_;
	}

	// The slot engine's writes, each under the seqlock:
	void publish(uint64_t slot, uint64_t at_ns, uint64_t late, uint64_t missed);
	void set_quiet(uint32_t quiet);
	// A change under way takes over at at_ns (0: none any more).
	void set_change(uint64_t at_ns);
	// A new schedule: header and tables (grows the file first when needed).
	void write_tables(const Tables &t, uint64_t margin_ns);

	// Remove the file when this object goes (whatever ends the daemon);
	// only while the path still names our file.
	void remove_on_close()
	{
		remove_ = true;
	}

      private:
	ShmPage() = default;
	void map(uint64_t reserve, bool anon);
	void grow(uint64_t size);
	void fill(const Tables &t, uint64_t margin_ns, uint32_t quiet);

	lumen_osched_page *pg_ = nullptr;
	uint64_t reserve_ = 0; // bytes mapped
	uint64_t file_size_ = 0;
	Fd fd_;
	std::string path_;
	bool remove_ = false;
};

} // namespace lumen::lumend

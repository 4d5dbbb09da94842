// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/lumend/shm_page.cpp - the shared-memory slot page: layout,
// creation, locking, seqlock writes (shm_page.h).
#include "lumend/shm_page.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "base/error.h"

namespace lumen::lumend
{

static_assert(sizeof(lumen_osched_page) == 192, "the page header is three cache lines");

namespace
{

constexpr uint64_t kPage = 4096;

uint64_t round_up(uint64_t v, uint64_t to)
{
	return (v + to - 1) / to * to;
}

// The largest file any valid schedule needs: waits and dsts each hold at
// most uplinks * period * nodes <= kMaxEntries entries.
uint64_t max_file_size()
{
	return round_up(round_up(sizeof(lumen_osched_page), 64) + round_up(sched::kMaxEntries * 2, 64) +
				sched::kMaxEntries * 2,
			kPage);
}

} // namespace

Tables build_tables(const sched::Schedule &s, uint32_t self)
{
	Tables t;
	t.waits = sched::wait_table(s, self); /* refuses a bad self or period */
	t.timing = sched::slot_timing(s);
	t.version = s.version;
	t.self = self;
	t.nodes = s.nodes;
	t.uplinks = s.uplinks;
	double mbps = std::round(s.link_gbps * 1000);
	t.rate_mbps = mbps > 0 && mbps < 4e9 ? (uint32_t)mbps : 0;
	t.dsts.resize((size_t)s.period * s.uplinks);
	for (uint32_t slot = 0; slot < s.period; slot++)
		for (uint32_t p = 0; p < s.uplinks; p++)
			t.dsts[(size_t)slot * s.uplinks + p] = (uint16_t)s.to(p, slot, self);
	return t;
}

Layout layout_for(uint32_t nodes, uint32_t uplinks, uint32_t period)
{
	Layout l;
	uint64_t waits = (uint64_t)period * nodes * 2, dsts = (uint64_t)period * uplinks * 2;
	l.waits_off = (uint32_t)round_up(sizeof(lumen_osched_page), 64);
	l.dsts_off = (uint32_t)round_up(l.waits_off + waits, 64);
	l.size = round_up(l.dsts_off + dsts, kPage);
	return l;
}

void ShmPage::map(uint64_t reserve, bool anon)
{
	void *p = anon ? mmap(nullptr, reserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
			      0)
		       : mmap(nullptr, reserve, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0);
	if (p == MAP_FAILED)
		throw Error("cannot map the slot page: " + errno_text(errno));
	pg_ = static_cast<lumen_osched_page *>(p);
	reserve_ = reserve;
}

void ShmPage::grow(uint64_t size)
{
	if (size <= file_size_)
		return;
	if (fd_.valid() && ftruncate(fd_.get(), (off_t)size) != 0)
		throw Error("cannot grow " + path_ + " to " + std::to_string(size) + " bytes: " + errno_text(errno));
	file_size_ = size;
}

// The header's fields and the tables, without the seqlock (the callers
// hold it).
void ShmPage::fill(const Tables &t, uint64_t margin_ns, uint32_t quiet)
{
	Layout l = layout_for(t.nodes, t.uplinks, t.timing.period);
	grow(l.size);
	lumen_osched_page *pg = pg_;
	pg->magic = LUMEN_OSCHED_MAGIC;
	pg->abi = LUMEN_OSCHED_ABI;
	pg->quiet = quiet;
	pg->version = t.version;
	pg->timing = t.timing;
	pg->self = t.self;
	pg->nodes = t.nodes;
	pg->uplinks = t.uplinks;
	pg->rate_mbps = t.rate_mbps;
	pg->margin_ns = margin_ns;
	pg->waits_off = l.waits_off;
	pg->dsts_off = l.dsts_off;
	pg->size = file_size_;
	pg->change_ns = 0; /* new tables: a change, if any, is done */
	auto *base = reinterpret_cast<unsigned char *>(pg);
	std::memcpy(base + l.waits_off, t.waits.data(), t.waits.size() * 2);
	std::memcpy(base + l.dsts_off, t.dsts.data(), t.dsts.size() * 2);
}

ShmPage ShmPage::create(const std::string &path, const Tables &t, uint64_t margin_ns, uint32_t quiet)
{
	// another lumend's file is locked; a crashed one's is not, and is replaced
	Fd old(open(path.c_str(), O_RDWR | O_CLOEXEC));
	if (old.valid() && flock(old.get(), LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK)
		throw Error(path + " is in use by another lumend (give it another --shm PATH)");
	old.reset();

	ShmPage s;
	std::string tmp = path + ".tmp." + std::to_string(getpid());
	s.fd_.reset(open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
	if (!s.fd_.valid())
		throw Error("cannot create " + tmp + ": " + errno_text(errno));
	try {
		if (fchmod(s.fd_.get(), 0644) != 0 || flock(s.fd_.get(), LOCK_EX | LOCK_NB) != 0)
			throw Error("cannot set up " + tmp + ": " + errno_text(errno));
		s.map(max_file_size(), false);
		s.path_ = tmp;
		s.grow(layout_for(t.nodes, t.uplinks, t.timing.period).size);
		lumen_osched_write_begin(s.pg_);
		s.fill(t, margin_ns, quiet);
		lumen_osched_write_end(s.pg_);
		if (rename(tmp.c_str(), path.c_str()) != 0)
			throw Error("cannot rename " + tmp + " to " + path + ": " + errno_text(errno));
	} catch (...) {
		unlink(tmp.c_str());
		throw;
	}
	s.path_ = path;
	return s;
}

ShmPage ShmPage::anonymous(const Tables &t, uint64_t margin_ns, uint32_t quiet)
{
	ShmPage s;
	s.map(max_file_size(), true);
	lumen_osched_write_begin(s.pg_);
	s.fill(t, margin_ns, quiet);
	lumen_osched_write_end(s.pg_);
	return s;
}

ShmPage::ShmPage(ShmPage &&o) noexcept
    : pg_(o.pg_), reserve_(o.reserve_), file_size_(o.file_size_), fd_(std::move(o.fd_)), path_(std::move(o.path_)),
      remove_(o.remove_)
{
	o.pg_ = nullptr;
	o.remove_ = false;
}

ShmPage::~ShmPage()
{
	if (remove_ && fd_.valid()) {
		struct stat ours, there;
		if (fstat(fd_.get(), &ours) == 0 && stat(path_.c_str(), &there) == 0 && ours.st_ino == there.st_ino &&
		    ours.st_dev == there.st_dev)
			unlink(path_.c_str());
	}
	if (pg_)
		munmap(pg_, reserve_);
}

void ShmPage::publish(uint64_t slot, uint64_t at_ns, uint64_t late, uint64_t missed)
{
	lumen_osched_write_begin(pg_);
	pg_->slot = slot;
	pg_->boundary_ns = at_ns;
	pg_->late = late;
	pg_->missed = missed;
	lumen_osched_write_end(pg_);
}

void ShmPage::set_quiet(uint32_t quiet)
{
	lumen_osched_write_begin(pg_);
	pg_->quiet = quiet;
	lumen_osched_write_end(pg_);
}

void ShmPage::set_change(uint64_t at_ns)
{
	if (pg_->change_ns == at_ns)
		return;
	lumen_osched_write_begin(pg_);
	pg_->change_ns = at_ns;
	lumen_osched_write_end(pg_);
}

void ShmPage::write_tables(const Tables &t, uint64_t margin_ns)
{
	// the file grows before the seqlock is taken: readers see the old
	// header (and size) until the new one is complete
	grow(layout_for(t.nodes, t.uplinks, t.timing.period).size);
	lumen_osched_write_begin(pg_);
	fill(t, margin_ns, pg_->quiet);
	lumen_osched_write_end(pg_);
}

} // namespace lumen::lumend

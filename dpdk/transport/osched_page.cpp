/*
 * osched_page.cpp - lumend's page as lumen-dp reads it (osched_page.h).
 */
#include "transport/osched_page.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

extern "C" {
#include <lumen/optical_wire.h>
}

namespace lumen::dp
{

OschedPage::~OschedPage()
{
	if (pg_)
		munmap(const_cast<lumen_osched_page *>(pg_), len_);
}

uint64_t OschedPage::default_stale_ns(uint64_t slot_ns)
{
	return lumen_osched_default_stale_ns(slot_ns);
}

std::string OschedPage::open(const std::string &path, uint64_t stale_ns)
{
	path_ = path;
	stale_ns_ = stale_ns;
	return map();
}

/* (Re)maps the whole file at path_; pg_ is null unless it is a page. */
std::string OschedPage::map()
{
	const std::string &path = path_;
	if (pg_) {
		munmap(const_cast<lumen_osched_page *>(pg_), len_);
		pg_ = nullptr;
		len_ = 0;
	}
	int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return "cannot open lumend's page " + path + ": " + std::strerror(errno) + " (is lumend running?)";
	struct stat st;
	if (fstat(fd, &st) != 0) {
		::close(fd);
		return "cannot read " + path + ": " + std::strerror(errno);
	}
	/* the file judged, good or not: check() looks again only at another */
	dev_ = (uint64_t)st.st_dev;
	ino_ = (uint64_t)st.st_ino;
	if ((size_t)st.st_size < sizeof(lumen_osched_page)) {
		::close(fd);
		return path + " is no lumend page (too short)";
	}
	void *m = mmap(nullptr, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	::close(fd);
	if (m == MAP_FAILED)
		return "cannot map " + path + ": " + std::strerror(errno);
	const auto *pg = (const lumen_osched_page *)m;
	if (pg->magic != LUMEN_OSCHED_MAGIC || pg->abi != LUMEN_OSCHED_ABI) {
		munmap(m, (size_t)st.st_size);
		return path + " is no lumend page of ABI " + std::to_string(LUMEN_OSCHED_ABI);
	}
	pg_ = pg;
	len_ = (size_t)st.st_size;
	return "";
}

bool OschedPage::refresh(GateTables *t)
{
	if (!pg_)
		return false;
	uint32_t s = __atomic_load_n(&pg_->seq, __ATOMIC_ACQUIRE);
	if (s == seq_ || (s & 1u))
		return false;
	if (pg_->size > len_) {
		/* a new schedule grew the file past our mapping (lumend grows
		 * it before it writes the header that says so): map it again,
		 * then read it (quiet if that fails) */
		if (!map().empty()) {
			t->quiet |= LUMEN_QUIET_NO_SCHEDULE;
			return true;
		}
		s = __atomic_load_n(&pg_->seq, __ATOMIC_ACQUIRE);
		if (s & 1u)
			return false;
	}
	return read(s, t);
}

/* The header, and the tables when the version moved, read between the
 * seqlock's begin (s) and its retry; *t is written only with a whole read.
 * Every field is read once: what is checked is what is used. */
bool OschedPage::read(uint32_t s, GateTables *t)
{
	const lumen_osched_page *pg = pg_;
	const uint32_t quiet = pg->quiet, self = pg->self, nodes = pg->nodes, waits_off = pg->waits_off;
	const lumen_slot_timing timing = pg->timing;
	const uint64_t version = pg->version, margin_ns = pg->margin_ns, change_ns = pg->change_ns;
	size_t count = (size_t)timing.period * nodes;
	uint32_t bad = 0;
	const bool tables = force_tables_ || version != t->version || t->waits.size() != count;
	if (tables) {
		/* never past the mapping, whatever a torn header says */
		if (waits_off > len_ || count > (len_ - waits_off) / sizeof(uint16_t)) {
			bad = LUMEN_QUIET_NO_SCHEDULE;
			count = 0;
		}
		scratch_.resize(count);
		if (count)
			std::memcpy(scratch_.data(), (const char *)pg + waits_off, count * sizeof(uint16_t));
	}
	if (lumen_osched_read_retry(pg, s))
		return false;
	const bool news = tables || (quiet | bad | own_) != t->quiet || change_ns != t->change_ns;
	seq_ = s;
	force_tables_ = false;
	t->quiet = quiet | bad | own_;
	t->timing = timing;
	t->self = self;
	t->nodes = nodes;
	t->margin_ns = margin_ns;
	t->change_ns = change_ns;
	t->version = version;
	if (tables)
		t->waits.swap(scratch_); /* no copy, no allocation once scratch_ has room */
	return news;
}

namespace
{

/* The page's change (its instant; staged or committed, the page does not
 * say) as optical.h judges an overdue one. */
bool change_overdue(uint64_t change_ns, uint64_t now_tai, uint64_t limit)
{
	lumen_sched_change c{};
	c.switch_ns = change_ns;
	c.state = change_ns ? LUMEN_CHANGE_STAGED : LUMEN_CHANGE_NONE;
	return lumen_change_overdue(&c, now_tai, limit);
}

} // namespace

bool OschedPage::poll(GateTables *t, uint64_t now_ns)
{
	bool news = refresh(t);
	if (now_ns < next_check_)
		return news;
	next_check_ = now_ns + kCheckNs;
	timespec ts;
	clock_gettime(CLOCK_TAI, &ts);
	return check((uint64_t)ts.tv_sec * 1'000'000'000ull + (uint64_t)ts.tv_nsec, t) || news;
}

void OschedPage::warn(const std::string &line)
{
	if (warn_)
		warn_(line, warn_arg_);
	else
		std::fprintf(stderr, "lumen-dp: %s\n", line.c_str());
}

/* The reader's own quiet bits become bits; true when *t changed. */
bool OschedPage::set_own(uint32_t bits, const std::string &why, GateTables *t)
{
	why_ = bits ? why : "";
	if (bits == own_)
		return false;
	own_ = bits;
	const uint32_t q = (t->quiet & ~(kQuietStale | kQuietPage)) | own_;
	if (q == t->quiet)
		return false;
	t->quiet = q;
	return true;
}

bool OschedPage::check(uint64_t now_tai, GateTables *t)
{
	/* a restarted lumend: the path names another file than the one mapped */
	struct stat st;
	bool news = false;
	if (::stat(path_.c_str(), &st) == 0 && ((uint64_t)st.st_dev != dev_ || (uint64_t)st.st_ino != ino_)) {
		/* judged once, even if it cannot be opened (map() takes the
		 * identity of what it opens, when it can) */
		dev_ = (uint64_t)st.st_dev;
		ino_ = (uint64_t)st.st_ino;
		if (std::string e = map(); !e.empty()) {
			st_.bad++;
			warn("lumend's page " + path_ + " was replaced: " + e + "; quiet until it names a page");
			return set_own(kQuietPage, e, t);
		}
		st_.reopened++;
		warn("lumend's page " + path_ + " is another file (lumend started again): mapped again");
		seq_ = 1; /* read it whole: header and tables */
		force_tables_ = true;
		set_own(own_ & ~(kQuietPage | kQuietStale), "", t);
		since_ = now_tai;
		refresh(t);
		news = true;
		/* judged below as any page: a new lumend may not have published yet */
	}
	if (!pg_)
		return false; /* a bad file stays quiet (kQuietPage) until another comes */
	const uint64_t boundary = __atomic_load_n(&pg_->boundary_ns, __ATOMIC_RELAXED);
	const uint64_t limit = stale_ns_ ? stale_ns_ : default_stale_ns(t->timing.slot_ns);
	if (!since_)
		since_ = now_tai;
	std::string why;
	/* a page that has published nothing yet is given the limit from when
	 * it was first seen: a lumend just started publishes within a slot */
	if (lumen_osched_stale(now_tai, boundary ? boundary : since_, limit))
		why = boundary ? "its last slot boundary is " + std::to_string((now_tai - boundary) / 1'000'000) +
					 " ms old"
			       : "it has published no slot boundary";
	else if (!(t->quiet & ~(kQuietStale | kQuietPage)) && change_overdue(t->change_ns, now_tai, limit))
		/* lumend puts the new tables in at the instant, or says quiet
		 * (version): a page that does neither is not followed
		 * (include/lumen/optical.h: a change never committed) */
		why = "the change at " + std::to_string(t->change_ns) + " ns TAI is " +
		      std::to_string((now_tai - t->change_ns) / 1'000'000) + " ms past and not in it";
	if (!why.empty() && !(own_ & kQuietStale)) {
		st_.stale++;
		warn("lumend's page " + path_ + " is stale: " + why + " (limit " + std::to_string(limit / 1'000'000) +
		     " ms; lumend died?): quiet until it publishes again");
	}
	return set_own(why.empty() ? own_ & ~kQuietStale : own_ | kQuietStale, why, t) || news;
}

} // namespace lumen::dp

/*
 * osched_page.cpp - lumend's page as lumen-dp reads it (osched_page.h).
 */
#include "transport/osched_page.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lumen::dp
{

OschedPage::~OschedPage()
{
	if (pg_)
		munmap(const_cast<lumen_osched_page *>(pg_), len_);
}

std::string OschedPage::open(const std::string &path)
{
	path_ = path;
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
	if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(lumen_osched_page)) {
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
	const bool tables = version != t->version || t->waits.size() != count;
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
	const bool news = tables || (quiet | bad) != t->quiet || change_ns != t->change_ns;
	seq_ = s;
	t->quiet = quiet | bad;
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

} // namespace lumen::dp

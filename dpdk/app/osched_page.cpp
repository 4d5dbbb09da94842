/*
 * osched_page.cpp - lumend's page as lumen-dp reads it (osched_page.h).
 */
#include "app/osched_page.h"

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

std::string OschedPage::map()
{
	const std::string &path = path_;
	if (pg_) {
		munmap(const_cast<lumen_osched_page *>(pg_), len_);
		pg_ = nullptr;
	}
	int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return "cannot open lumend's page " + path + ": " + std::strerror(errno) + " (is lumend running?)";
	struct stat st;
	if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(lumen_osched_page)) {
		::close(fd);
		return path + " is no lumend page (too short)";
	}
	len_ = (size_t)st.st_size;
	void *m = mmap(nullptr, len_, PROT_READ, MAP_SHARED, fd, 0);
	::close(fd);
	if (m == MAP_FAILED)
		return "cannot map " + path + ": " + std::strerror(errno);
	pg_ = (const lumen_osched_page *)m;
	if (pg_->magic != LUMEN_OSCHED_MAGIC || pg_->abi != LUMEN_OSCHED_ABI)
		return path + " is no lumend page of ABI " + std::to_string(LUMEN_OSCHED_ABI);
	return "";
}

bool OschedPage::refresh(GateTables *t)
{
	if (!pg_)
		return false;
	uint32_t s = __atomic_load_n(&pg_->seq, __ATOMIC_ACQUIRE);
	if (s == seq_ || (s & 1u))
		return false;
	/* every boundary bumps seq: read the header, and the tables only
	 * when the version moved */
	GateTables n = *t;
	n.quiet = pg_->quiet;
	n.timing = pg_->timing;
	n.self = pg_->self;
	n.nodes = pg_->nodes;
	n.margin_ns = pg_->margin_ns;
	n.change_ns = pg_->change_ns;
	uint64_t version = pg_->version;
	size_t count = (size_t)n.timing.period * n.nodes;
	bool tables = version != t->version || n.waits.size() != count;
	if (pg_->size > len_) {
		/* a new schedule grew the file past our mapping: map it again,
		 * and read it next time (quiet if that fails) */
		if (!map().empty()) {
			t->quiet |= LUMEN_QUIET_NO_SCHEDULE;
			return true;
		}
		return false;
	}
	if (tables) {
		if (pg_->waits_off + count * sizeof(uint16_t) > len_) {
			n.quiet |= LUMEN_QUIET_NO_SCHEDULE;
			count = 0;
		}
		n.waits.resize(count);
		if (count)
			std::memcpy(n.waits.data(), (const char *)pg_ + pg_->waits_off, count * sizeof(uint16_t));
	}
	n.version = version;
	if (lumen_osched_read_retry(pg_, s))
		return false;
	bool news = tables || n.quiet != t->quiet || n.change_ns != t->change_ns;
	seq_ = s;
	*t = std::move(n);
	return news;
}

} // namespace lumen::dp

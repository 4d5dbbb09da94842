// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tests/lumend_page_test.cpp - lumend's shared-memory page
// (userspace/lumend/shm_page.h) as a reader sees it: the header and the
// tables where the header says, the file's mode and size, one lumend per
// path, the file gone when lumend goes; and the seqlock: a reader never
// sees a torn header or table while a writer thread writes.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>

#include "base/error.h"
#include "base/system.h"
#include "lumend/shm_page.h"
#include "sched/schedule.h"

namespace
{

using namespace lumen;
using namespace lumen::lumend;

class LumendPage : public ::testing::Test
{
      protected:
	void SetUp() override
	{
		char tmpl[] = "/tmp/lumend-page-XXXXXX";
		ASSERT_NE(mkdtemp(tmpl), nullptr);
		dir_ = tmpl;
		sched::Timing t;
		t.slot_ns = 100'000;
		t.guard_ns = 10'000;
		t.t0_ns = 1'700'000'000'000'000'000ull;
		t.version = 5;
		tables_ = build_tables(sched::round_robin(5, 2, false, t), 3);
	}
	void TearDown() override
	{
		std::system(("rm -rf '" + dir_ + "'").c_str());
	}
	std::string path(const std::string &name) const
	{
		return dir_ + "/" + name;
	}
	std::string dir_;
	Tables tables_;
};

// What a reader does: maps the file read-only.
struct Reader {
	explicit Reader(const std::string &path)
	{
		int fd = open(path.c_str(), O_RDONLY);
		EXPECT_GE(fd, 0);
		struct stat st;
		fstat(fd, &st);
		size = (size_t)st.st_size;
		p = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
		close(fd);
		EXPECT_NE(p, MAP_FAILED);
	}
	~Reader()
	{
		munmap(p, size);
	}
	const lumen_osched_page *pg() const
	{
		return static_cast<const lumen_osched_page *>(p);
	}
	const uint16_t *table(uint32_t off) const
	{
		return reinterpret_cast<const uint16_t *>(static_cast<const char *>(p) + off);
	}
	void *p;
	size_t size;
};

TEST_F(LumendPage, HeaderAndTablesAsPublished)
{
	{
		ShmPage page = ShmPage::create(path("pg"), tables_, 2500, LUMEN_QUIET_CLOCK);
		struct stat st;
		ASSERT_EQ(stat(path("pg").c_str(), &st), 0);
		EXPECT_EQ(st.st_mode & 0777, 0644u);
		Reader r(path("pg"));
		const lumen_osched_page *pg = r.pg();
		EXPECT_EQ(pg->magic, LUMEN_OSCHED_MAGIC);
		EXPECT_EQ(pg->abi, LUMEN_OSCHED_ABI);
		EXPECT_EQ(pg->seq % 2, 0u);
		EXPECT_EQ(pg->quiet, LUMEN_QUIET_CLOCK);
		EXPECT_EQ(pg->version, 5u);
		EXPECT_EQ(pg->self, 3u);
		EXPECT_EQ(pg->nodes, 5u);
		EXPECT_EQ(pg->uplinks, 2u);
		EXPECT_EQ(pg->margin_ns, 2500u);
		EXPECT_EQ(std::memcmp(&pg->timing, &tables_.timing, sizeof(pg->timing)), 0);
		EXPECT_EQ(pg->size, (uint64_t)st.st_size);
		EXPECT_EQ(std::memcmp(r.table(pg->waits_off), tables_.waits.data(), tables_.waits.size() * 2), 0);
		EXPECT_EQ(std::memcmp(r.table(pg->dsts_off), tables_.dsts.data(), tables_.dsts.size() * 2), 0);

		page.publish(42, 1234, 1, 2);
		page.set_quiet(0);
		EXPECT_EQ(pg->slot, 42u);
		EXPECT_EQ(pg->boundary_ns, 1234u);
		EXPECT_EQ(pg->late, 1u);
		EXPECT_EQ(pg->missed, 2u);
		EXPECT_EQ(pg->quiet, 0u);
		EXPECT_EQ(pg->seq % 2, 0u);
		// no temporary file left next to it
		EXPECT_EQ(list_dir(dir_), std::vector<std::string>{"pg"});
	}
	// not removed unless asked
	EXPECT_TRUE(path_exists(path("pg")));
}

TEST_F(LumendPage, OneLumendPerPathAndRemovedAtTheEnd)
{
	{
		ShmPage page = ShmPage::create(path("pg"), tables_, 0, 0);
		page.remove_on_close();
		EXPECT_THROW(ShmPage::create(path("pg"), tables_, 0, 0), Error);
	}
	EXPECT_FALSE(path_exists(path("pg")));
	// a stale file (nobody holds its lock) is replaced
	write_file(path("pg"), "stale");
	{
		ShmPage page = ShmPage::create(path("pg"), tables_, 0, 0);
		page.remove_on_close();
		Reader r(path("pg"));
		EXPECT_EQ(r.pg()->magic, LUMEN_OSCHED_MAGIC);
		// somebody else's file at the path by the end is left alone
		ASSERT_EQ(rename(path("pg").c_str(), path("moved").c_str()), 0);
		write_file(path("pg"), "theirs");
	}
	EXPECT_EQ(read_file(path("pg")), "theirs");
	EXPECT_THROW(ShmPage::create(path("no/such/dir/pg"), tables_, 0, 0), Error);
}

TEST_F(LumendPage, NewScheduleGrowsTheFile)
{
	ShmPage page = ShmPage::create(path("pg"), tables_, 0, 0);
	// more slots, fewer uplinks: the same node count, another shape
	sched::Schedule s = sched::Schedule::idle(5, 1, 3000);
	s.slot_ns = 1000;
	s.version = 7;
	Tables big = build_tables(s, 3);
	page.write_tables(big, 100);
	Reader r(path("pg"));
	const lumen_osched_page *pg = r.pg();
	EXPECT_EQ(pg->version, 7u);
	EXPECT_EQ(pg->timing.period, 3000u);
	EXPECT_EQ(pg->uplinks, 1u);
	EXPECT_EQ(pg->margin_ns, 100u);
	EXPECT_GE(r.size, (size_t)pg->dsts_off + big.dsts.size() * 2);
	EXPECT_EQ(pg->size, r.size);
	EXPECT_EQ(std::memcmp(r.table(pg->waits_off), big.waits.data(), big.waits.size() * 2), 0);
	EXPECT_EQ(std::memcmp(r.table(pg->dsts_off), big.dsts.data(), big.dsts.size() * 2), 0);
}

TEST_F(LumendPage, AnonymousForMeasureRuns)
{
	ShmPage page = ShmPage::anonymous(tables_, 7, 0);
	EXPECT_EQ(page.page()->magic, LUMEN_OSCHED_MAGIC);
	EXPECT_EQ(page.page()->margin_ns, 7u);
	EXPECT_TRUE(page.path().empty());
	page.publish(1, 2, 0, 0);
	EXPECT_EQ(page.page()->slot, 1u);
}

// A writer thread publishes slot k with boundary_ns = 1000 k, late = k,
// missed = 2 k, and flips between two schedules whose version and waits
// agree; a reader checks every read the seqlock lets through.
//
// A torn read is only possible while a read overlaps a write, and how
// often that happens in a fixed time is luck: on a loaded machine both
// threads may share one core and take turns, overlapping only when the
// reader is descheduled mid-read (a few times a second). So one read in
// 32 yields its CPU halfway (between slot and the rest, or between the
// version and the tables), as a descheduled reader would, and the writer
// goes on meanwhile on whatever core; the other reads race the writer as
// they come.
//
// The reader watches the sequence number itself (apart from
// lumen_osched_read_retry: a broken retry must not hide the overlaps) and
// goes on until it has overlapped kOverlaps writes, every one of which
// the seqlock must have refused, has seen both schedules whole and the
// writer past slot 1000; a generous cap ends a reader that never gets
// there, a failure: nothing would have been tested.
TEST_F(LumendPage, ReaderNeverSeesATornPage)
{
	constexpr uint64_t kOverlaps = 300, kConsistent = 10'000;
	constexpr uint64_t kCapNs = 60'000'000'000;
	ShmPage page = ShmPage::create(path("pg"), tables_, 0, 0);
	Tables a = tables_, b = tables_;
	a.version = 100;
	a.waits.assign(a.waits.size(), 100);
	b.version = 200;
	b.waits.assign(b.waits.size(), 200);
	Reader r(path("pg"));
	const lumen_osched_page *pg = r.pg();

	std::atomic<bool> done{false};
	std::thread writer([&] {
		for (uint64_t k = 1; !done.load(std::memory_order_relaxed); k++) {
			page.publish(k, 1000 * k, k, 2 * k);
			if (k % 64 == 0)
				page.write_tables(k % 128 ? a : b, 0);
		}
	});
	// stops the writer however the reader ends (a failed ASSERT returns)
	struct Stop {
		std::atomic<bool> &done;
		std::thread &writer;
		~Stop()
		{
			done = true;
			writer.join();
		}
	} stop{done, writer};
	auto pause = [] { std::this_thread::yield(); };
	uint64_t consistent = 0, retries = 0, overlaps = 0, raced = 0, last = 0;
	bool seen_a = false, seen_b = false;
	const uint64_t start = monotonic_ns();
	uint64_t now = start;
	auto more = [&] {
		return overlaps < kOverlaps || consistent < kConsistent || !seen_a || !seen_b || last <= 1000;
	};
	for (uint64_t n = 0; more() && now - start < kCapNs; n++) {
		uint32_t s = lumen_osched_read_begin(pg);
		uint64_t slot = pg->slot;
		if (n % 64 == 0)
			pause();
		uint64_t at = pg->boundary_ns, late = pg->late, missed = pg->missed;
		uint64_t version = pg->version;
		if (n % 64 == 32)
			pause();
		uint16_t first = r.table(pg->waits_off)[0], lastw = r.table(pg->waits_off)[a.waits.size() - 1];
		// the test's own look, before the seqlock's: the sequence never
		// goes back, so a change seen here is one read_retry must see too
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		bool overlapped = __atomic_load_n(&pg->seq, __ATOMIC_RELAXED) != s;
		bool retry = lumen_osched_read_retry(pg, s);
		now = monotonic_ns();
		if (overlapped) {
			overlaps++;
			raced += n % 32 != 0;
			ASSERT_TRUE(retry)
				<< "a read that overlapped a write (seq " << s << " changed) was let through";
		}
		if (retry) {
			retries++;
			continue;
		}
		consistent++;
		ASSERT_EQ(at, 1000 * slot);
		ASSERT_EQ(late, slot);
		ASSERT_EQ(missed, 2 * slot);
		ASSERT_GE(slot, last); // never back in time
		last = slot;
		if (version == 100 || version == 200) {
			ASSERT_EQ(first, version);
			ASSERT_EQ(lastw, version);
			(version == 100 ? seen_a : seen_b) = true;
		}
	}
	EXPECT_GE(overlaps, kOverlaps) << "the reader overlapped a write " << overlaps << " times in "
				       << (now - start) / 1'000'000 << " ms: a torn read was hardly possible";
	EXPECT_GE(consistent, kConsistent);
	EXPECT_GT(last, 1000u);
	EXPECT_TRUE(seen_a && seen_b) << "both schedules read whole";
	RecordProperty("overlaps", std::to_string(overlaps));
	RecordProperty("overlaps_unpaused", std::to_string(raced));
	RecordProperty("retries", std::to_string(retries));
	RecordProperty("ms", std::to_string((now - start) / 1'000'000));
}

} // namespace

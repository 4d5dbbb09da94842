// dp_osched_page_test: lumen-dp's reader of lumend's page (dpdk/transport/
// osched_page.h) against lumend's own writer (userspace/lumend/shm_page.h),
// a file in a temporary directory. The reader maps the page and reads
// header and tables; a new schedule of another shape grows the file past
// the reader's mapping, and the reader maps it again and reads the new
// tables, at once; with a writer thread publishing ever larger schedules,
// every table the reader hands out is one whole version's, never a torn or
// out-of-bounds one, and it follows the file to its last size.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "lumend/shm_page.h"
#include "sched/schedule.h"
#include "transport/osched_page.h"

using namespace lumen;
using lumen::dp::GateTables;
using lumen::dp::OschedPage;

namespace
{

class DpOschedPage : public ::testing::Test
{
      protected:
	void SetUp() override
	{
		char tmpl[] = "/tmp/dp-osched-XXXXXX";
		ASSERT_NE(mkdtemp(tmpl), nullptr);
		dir_ = tmpl;
		path_ = dir_ + "/pg";
	}
	void TearDown() override
	{
		std::system(("rm -rf '" + dir_ + "'").c_str());
	}
	std::string dir_, path_;
};

// Tables of `period` slots for 8 nodes, one uplink, version v: every wait
// is v's mark, so a table mixed from two versions shows.
lumend::Tables marked(uint64_t v, uint32_t period)
{
	lumend::Tables t;
	t.timing.t0_ns = 1'700'000'000'000'000'000ull;
	t.timing.slot_ns = 10'000;
	t.timing.guard_ns = 1'000;
	t.timing.period = period;
	t.version = v;
	t.self = 0;
	t.nodes = 8;
	t.uplinks = 1;
	t.rate_mbps = 10'000;
	t.waits.assign((size_t)period * t.nodes, (uint16_t)(v & 0x7fff));
	t.dsts.assign(period, 1);
	return t;
}

TEST_F(DpOschedPage, AGrownPageIsMappedAgainAndItsTablesRead)
{
	sched::Timing tm;
	tm.slot_ns = 100'000;
	tm.guard_ns = 10'000;
	tm.t0_ns = 1'700'000'000'000'000'000ull;
	tm.version = 5;
	lumend::Tables small = lumend::build_tables(sched::round_robin(5, 2, false, tm), 3);
	lumend::ShmPage page = lumend::ShmPage::create(path_, small, 2'500, 0);
	OschedPage r;
	ASSERT_EQ(r.open(path_), "");
	const size_t first = r.mapped();
	GateTables t;
	ASSERT_TRUE(r.refresh(&t));
	EXPECT_EQ(t.version, 5u);
	EXPECT_EQ(t.self, 3u);
	EXPECT_EQ(t.nodes, 5u);
	EXPECT_EQ(t.margin_ns, 2'500u);
	EXPECT_EQ(t.quiet, 0u);
	EXPECT_EQ(t.timing.period, small.timing.period);
	EXPECT_EQ(t.waits, small.waits);
	EXPECT_FALSE(r.refresh(&t)); // nothing new
	page.publish(1, 2, 0, 0);
	EXPECT_FALSE(r.refresh(&t)); // a boundary: nothing the gate needs

	// more slots, fewer uplinks: the file grows past the reader's mapping
	sched::Schedule s = sched::Schedule::idle(5, 1, 3000);
	s.slot_ns = 1000;
	s.version = 7;
	lumend::Tables big = lumend::build_tables(s, 3);
	page.write_tables(big, 100);
	ASSERT_GT(page.page()->size, first) << "the schedule must grow the file for this test";
	ASSERT_TRUE(r.refresh(&t)); // remapped and read in one go
	EXPECT_GE(r.mapped(), page.page()->size);
	EXPECT_EQ(t.version, 7u);
	EXPECT_EQ(t.quiet, 0u);
	EXPECT_EQ(t.margin_ns, 100u);
	EXPECT_EQ(t.timing.period, 3000u);
	EXPECT_EQ(t.waits, big.waits);

	// a change's instant and the quiet word are news; shorter tables
	// after longer ones are read from the same mapping
	page.set_change(1234);
	ASSERT_TRUE(r.refresh(&t));
	EXPECT_EQ(t.change_ns, 1234u);
	page.set_quiet(LUMEN_QUIET_CLOCK);
	ASSERT_TRUE(r.refresh(&t));
	EXPECT_EQ(t.quiet, LUMEN_QUIET_CLOCK);
	small.version = 8;
	page.write_tables(small, 0);
	ASSERT_TRUE(r.refresh(&t));
	EXPECT_EQ(t.version, 8u);
	EXPECT_EQ(t.change_ns, 0u); // new tables: the change is done
	EXPECT_EQ(t.waits, small.waits);
}

// A writer thread publishes versions 1..kVersions, each a longer schedule
// than the one before (the file grows every few), with boundaries in
// between; the reader polls as lumen-dp does. Every table it hands out is
// the length its header says and holds that version's mark throughout.
TEST_F(DpOschedPage, NeverATornOrOutOfBoundsTable)
{
	constexpr uint64_t kVersions = 400;
	lumend::ShmPage page = lumend::ShmPage::create(path_, marked(1, 4), 0, 0);
	OschedPage r;
	ASSERT_EQ(r.open(path_), "");
	const size_t first = r.mapped();
	std::atomic<bool> written{false}, stop{false};
	std::atomic<uint64_t> seen{0}; // the last version the reader handed out
	std::thread writer([&] {
		for (uint64_t v = 2; v <= kVersions && !stop.load(); v++) {
			for (uint64_t k = 0; k < 16; k++)
				page.publish(v * 16 + k, 0, 0, 0);
			page.write_tables(marked(v, (uint32_t)(4 + 40 * v)), 0);
			// the next write as the reader reads this one (or
			// soon after, if it is slow): reads that overlap writes
			auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
			while (seen.load() + 1 < v && std::chrono::steady_clock::now() < until)
				;
		}
		written = true;
	});
	// stops the writer however the reader ends (a failed ASSERT returns)
	struct Join {
		std::atomic<bool> &stop;
		std::thread &writer;
		~Join()
		{
			stop = true;
			writer.join();
		}
	} join{stop, writer};
	GateTables t;
	uint64_t reads = 0, last = 0;
	bool done = false;
	while (!done) {
		done = written.load(); // one more look after the writer's last write
		if (!r.refresh(&t))
			continue;
		reads++;
		ASSERT_EQ(t.quiet, 0u) << "version " << t.version;
		ASSERT_EQ(t.waits.size(), (size_t)t.timing.period * t.nodes) << "version " << t.version;
		ASSERT_EQ(t.timing.period, 4 + 40 * (t.version > 1 ? t.version : 0)) << "version " << t.version;
		ASSERT_GE(t.version, last); // never back
		last = t.version;
		seen = last;
		for (size_t i = 0; i < t.waits.size(); i++)
			ASSERT_EQ(t.waits[i], (uint16_t)t.version) << "version " << t.version << " wait " << i;
	}
	EXPECT_EQ(last, kVersions);
	EXPECT_GE(r.mapped(), page.page()->size);
	EXPECT_GT(page.page()->size, 10 * first); // it grew many times
	EXPECT_GT(reads, kVersions / 4); // the reader kept up: it read while the writer wrote
	RecordProperty("reads", std::to_string(reads));
}

} // namespace

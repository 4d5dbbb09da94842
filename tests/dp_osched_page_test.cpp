// dp_osched_page_test: lumen-dp's reader of lumend's page (dpdk/transport/
// osched_page.h) against lumend's own writer (userspace/lumend/shm_page.h),
// a file in a temporary directory. The reader maps the page and reads
// header and tables; a new schedule of another shape grows the file past
// the reader's mapping, and the reader maps it again and reads the new
// tables, at once; with a writer thread publishing ever larger schedules,
// every table the reader hands out is one whole version's, never a torn or
// out-of-bounds one, and it follows the file to its last size.
// Staleness and restarts (issue 25, §3): a page whose boundary stops moving
// makes the reader quiet (stale) until lumend publishes again, as the
// kernel's gate does; a lumend started again (a new file at the path) is
// mapped again and read whole, where the old reader kept the dead lumend's
// mapping for ever; a file that is no page keeps it quiet, with a reason;
// a change's instant long past and still not in the page is stale too.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "lumend/shm_page.h"
#include "sched/schedule.h"
#include "transport/osched_page.h"

using namespace lumen;
using lumen::dp::GateTables;
using lumen::dp::GateVerdict;
using lumen::dp::kQuietPage;
using lumen::dp::kQuietStale;
using lumen::dp::OpticalGate;
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

constexpr uint64_t kMs = 1'000'000;

// Collects the reader's warning lines.
struct Warnings {
	std::vector<std::string> lines;
	static void add(const std::string &l, void *self)
	{
		((Warnings *)self)->lines.push_back(l);
	}
};

TEST_F(DpOschedPage, AStalePageIsQuietUntilLumendPublishesAgain)
{
	lumend::ShmPage page = lumend::ShmPage::create(path_, marked(1, 4), 0, 0);
	const uint64_t t0 = 1'800'000'000'000'000'000ull;
	page.publish(1, t0, 0, 0);
	OschedPage r;
	Warnings w;
	r.on_warning(&Warnings::add, &w);
	ASSERT_EQ(r.open(path_, 50 * kMs), "");
	GateTables t;
	ASSERT_TRUE(r.refresh(&t));
	EXPECT_FALSE(r.check(t0 + 10 * kMs, &t));
	EXPECT_FALSE(r.check(t0 + 50 * kMs, &t)); // at the limit: not yet
	EXPECT_EQ(t.quiet, 0u);
	// lumend SIGKILLed: the page still says "gating", its boundary stops
	ASSERT_TRUE(r.check(t0 + 50 * kMs + 1, &t));
	EXPECT_EQ(t.quiet, kQuietStale);
	EXPECT_EQ(r.stats().stale, 1u);
	ASSERT_EQ(w.lines.size(), 1u);
	EXPECT_NE(w.lines[0].find("stale"), std::string::npos) << w.lines[0];
	EXPECT_NE(r.why().find("50 ms old"), std::string::npos) << r.why();
	EXPECT_FALSE(r.check(t0 + 60 * kMs, &t)); // one line per spell
	EXPECT_EQ(w.lines.size(), 1u);
	// lumend's own quiet word is kept beside the reader's
	page.set_quiet(LUMEN_QUIET_CLOCK);
	ASSERT_TRUE(r.refresh(&t));
	EXPECT_EQ(t.quiet, kQuietStale | LUMEN_QUIET_CLOCK);
	page.set_quiet(0);
	ASSERT_TRUE(r.refresh(&t));
	EXPECT_EQ(t.quiet, kQuietStale);

	// the gate drops what it is offered and counts it as stale
	OpticalGate g({{0x0a000002, 1}}, 1000, 1'000'000'000);
	g.set_tables(t);
	uint64_t dep = 0;
	EXPECT_EQ(g.book(0x0a000002, 100, t0 + 70 * kMs, &dep), GateVerdict::kQuiet);
	EXPECT_EQ(g.stats().stale, 1u);
	EXPECT_EQ(g.stats().quiet, 0u);

	// a boundary again: quiet no more
	page.publish(9, t0 + 80 * kMs, 0, 0);
	r.refresh(&t);
	ASSERT_TRUE(r.check(t0 + 81 * kMs, &t));
	EXPECT_EQ(t.quiet, 0u);
	EXPECT_EQ(r.why(), "");
	g.set_tables(t);
	EXPECT_EQ(g.book(0x0a000002, 100, t0 + 81 * kMs, &dep), GateVerdict::kSend);

	// a page that never published is stale a limit after it was first seen
	page.publish(0, 0, 0, 0);
	r.refresh(&t);
	OschedPage fresh;
	ASSERT_EQ(fresh.open(path_, 50 * kMs), "");
	fresh.on_warning(&Warnings::add, &w);
	GateTables f;
	fresh.refresh(&f);
	EXPECT_FALSE(fresh.check(t0, &f));
	EXPECT_TRUE(fresh.check(t0 + 51 * kMs, &f));
	EXPECT_EQ(f.quiet, kQuietStale);
}

TEST_F(DpOschedPage, TheStaleLimitDefaultsToTheGates)
{
	EXPECT_EQ(OschedPage::default_stale_ns(10'000), 100 * kMs); // 4 slots under 100 ms
	EXPECT_EQ(OschedPage::default_stale_ns(40 * kMs), 160 * kMs); // 4 slots
	lumend::Tables tb = marked(1, 4);
	tb.timing.slot_ns = 40 * kMs;
	lumend::ShmPage page = lumend::ShmPage::create(path_, tb, 0, 0);
	const uint64_t t0 = 1'800'000'000'000'000'000ull;
	page.publish(1, t0, 0, 0);
	OschedPage r;
	Warnings w;
	r.on_warning(&Warnings::add, &w);
	ASSERT_EQ(r.open(path_), "");
	GateTables t;
	r.refresh(&t);
	EXPECT_FALSE(r.check(t0 + 160 * kMs, &t));
	EXPECT_TRUE(r.check(t0 + 160 * kMs + 1, &t));
	EXPECT_EQ(t.quiet, kQuietStale);
}

// lumend killed and started again: its new page is another file at the
// same path. The old reader's refresh() sees nothing (the dead lumend's
// mapping is still valid); check() maps the new one and reads it whole,
// even at the same version.
TEST_F(DpOschedPage, ARestartedLumendsNewPageIsMappedAgain)
{
	const uint64_t t0 = 1'800'000'000'000'000'000ull;
	GateTables t;
	OschedPage r;
	Warnings w;
	r.on_warning(&Warnings::add, &w);
	{
		lumend::Tables a = marked(5, 4);
		a.self = 3;
		lumend::ShmPage old = lumend::ShmPage::create(path_, a, 100, 0);
		old.publish(1, t0, 0, 0);
		ASSERT_EQ(r.open(path_, 50 * kMs), "");
		ASSERT_TRUE(r.refresh(&t));
		EXPECT_EQ(t.self, 3u);
	} // SIGKILL: the file stays, nobody writes it
	ASSERT_TRUE(r.check(t0 + 60 * kMs, &t)); // stale meanwhile
	EXPECT_EQ(t.quiet, kQuietStale);
	lumend::Tables b = marked(5, 6); // the same version, other tables
	b.self = 2;
	b.waits.assign(b.waits.size(), 77);
	lumend::ShmPage page = lumend::ShmPage::create(path_, b, 200, 0);
	page.publish(7, t0 + 70 * kMs, 0, 0);
	EXPECT_FALSE(r.refresh(&t)); // what the reader did before: the old file
	EXPECT_EQ(t.self, 3u);
	ASSERT_TRUE(r.check(t0 + 71 * kMs, &t));
	EXPECT_EQ(r.stats().reopened, 1u);
	EXPECT_EQ(t.quiet, 0u);
	EXPECT_EQ(t.self, 2u);
	EXPECT_EQ(t.margin_ns, 200u);
	EXPECT_EQ(t.timing.period, 6u);
	EXPECT_EQ(t.waits, b.waits);
	EXPECT_NE(w.lines.back().find("another file"), std::string::npos) << w.lines.back();
	EXPECT_FALSE(r.check(t0 + 72 * kMs, &t)); // the same file: nothing
	page.set_quiet(LUMEN_QUIET_STOPPED);
	EXPECT_TRUE(r.refresh(&t)); // the new mapping is followed
	EXPECT_EQ(t.quiet, LUMEN_QUIET_STOPPED);
}

// Replaces path's file by bytes (a temporary file renamed over it, as
// lumend does).
void replace(const std::string &path, const std::string &bytes)
{
	std::string tmp = path + ".new";
	std::ofstream(tmp, std::ios::binary) << bytes;
	ASSERT_EQ(std::rename(tmp.c_str(), path.c_str()), 0);
}

TEST_F(DpOschedPage, AReplacedFileThatIsNoPageKeepsTheGateQuiet)
{
	const uint64_t t0 = 1'800'000'000'000'000'000ull;
	OschedPage r;
	Warnings w;
	r.on_warning(&Warnings::add, &w);
	GateTables t;
	std::string abi1;
	{
		lumend::ShmPage old = lumend::ShmPage::create(path_, marked(1, 4), 0, 0);
		old.publish(1, t0, 0, 0);
		ASSERT_EQ(r.open(path_, 50 * kMs), "");
		ASSERT_TRUE(r.refresh(&t));
		std::ifstream in(path_, std::ios::binary);
		abi1.assign(std::istreambuf_iterator<char>(in), {});
	}
	// garbage
	replace(path_, std::string(8192, 'x'));
	ASSERT_TRUE(r.check(t0 + kMs, &t));
	EXPECT_EQ(t.quiet, kQuietPage);
	EXPECT_NE(r.why().find("no lumend page"), std::string::npos) << r.why();
	EXPECT_EQ(r.stats().bad, 1u);
	EXPECT_FALSE(r.check(t0 + 2 * kMs, &t)); // judged once
	EXPECT_EQ(w.lines.size(), 1u);
	// a page of another ABI
	lumen_osched_page h;
	std::memcpy(&h, abi1.data(), sizeof(h));
	h.abi = LUMEN_OSCHED_ABI + 1;
	std::memcpy(abi1.data(), &h, sizeof(h));
	replace(path_, abi1);
	ASSERT_FALSE(r.check(t0 + 3 * kMs, &t)); // still quiet, for another reason
	EXPECT_EQ(t.quiet, kQuietPage);
	EXPECT_NE(r.why().find("ABI"), std::string::npos) << r.why();
	EXPECT_EQ(r.stats().bad, 2u);
	// the gate counts it as quiet, not stale: lumend's page is not there
	OpticalGate g({{0x0a000002, 1}}, 1000, 1'000'000'000);
	g.set_tables(t);
	uint64_t dep = 0;
	EXPECT_EQ(g.book(0x0a000002, 100, t0, &dep), GateVerdict::kQuiet);
	EXPECT_EQ(g.stats().quiet, 1u);
	// a lumend makes its page there: followed
	lumend::ShmPage page = lumend::ShmPage::create(path_, marked(3, 4), 0, 0);
	page.publish(2, t0 + 4 * kMs, 0, 0);
	ASSERT_TRUE(r.check(t0 + 5 * kMs, &t));
	EXPECT_EQ(t.quiet, 0u);
	EXPECT_EQ(t.version, 3u);
	EXPECT_EQ(r.why(), "");
}

// A change's instant passed more than the stale limit ago, and the page
// has neither the new tables nor lumend's quiet word: not followed (the
// gate would defer every frame for ever). Before that, the change defers.
TEST_F(DpOschedPage, AChangeLongPastItsInstantIsStale)
{
	const uint64_t t0 = 1'800'000'000'000'000'000ull;
	lumend::ShmPage page = lumend::ShmPage::create(path_, marked(1, 4), 0, 0);
	OschedPage r;
	Warnings w;
	r.on_warning(&Warnings::add, &w);
	ASSERT_EQ(r.open(path_, 50 * kMs), "");
	page.set_change(t0 + 10 * kMs);
	page.publish(1, t0, 0, 0);
	GateTables t;
	ASSERT_TRUE(r.refresh(&t));
	EXPECT_EQ(t.change_ns, t0 + 10 * kMs);
	for (uint64_t at = t0; at <= t0 + 60 * kMs; at += 5 * kMs) {
		page.publish(at / kMs, at, 0, 0); // boundaries keep coming
		r.refresh(&t);
		EXPECT_FALSE(r.check(at, &t)) << (at - t0) / kMs << " ms";
	}
	page.publish(99, t0 + 61 * kMs, 0, 0);
	ASSERT_TRUE(r.check(t0 + 61 * kMs, &t));
	EXPECT_EQ(t.quiet, kQuietStale);
	EXPECT_NE(r.why().find("change"), std::string::npos) << r.why();
	// lumend's quiet word for it (version) is lumend's word: not stale
	page.set_quiet(LUMEN_QUIET_VERSION);
	r.refresh(&t);
	ASSERT_TRUE(r.check(t0 + 62 * kMs, &t));
	EXPECT_EQ(t.quiet, (uint32_t)LUMEN_QUIET_VERSION);
}

} // namespace

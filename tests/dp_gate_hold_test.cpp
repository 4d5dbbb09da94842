// dp_gate_hold_test: what lumen-dp's shell does with the frames its
// optical gate books (dpdk/transport/gate_hold.h), on a fake clock. Frames
// of several flows to several destinations, of any length, are offered
// while the shell polls, now and then late (a window closes before it
// releases what was booked into it: those frames are booked again, with
// everything behind them), across schedule changes whose new tables come
// in some time after their instant (frames deferred meanwhile). Every
// frame leaves once, none is lost, each flow's frames leave in the order
// they were offered, and each leaves inside a window of a slot that
// connects its pair in the schedule then in force.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "transport/gate_hold.h"

using namespace lumen::dp;

namespace
{

constexpr uint32_t kAddr = 0x0a000001; // 10.0.0.1: node 0, this host
constexpr uint32_t kNodes = 5;
constexpr uint64_t kT0 = 1'000'000'000'000ull;
constexpr uint64_t kLocal = 77'000; // the shell's clock: kT0 on CLOCK_TAI is this
constexpr uint32_t kRate = 10'000; // Mbit/s

struct Frame {
	std::vector<uint8_t> bytes;
	uint32_t node, flow, seq;
};

struct Frames {
	static uint8_t *bytes(Frame *f)
	{
		return f->bytes.data();
	}
	static uint32_t len(Frame *f)
	{
		return (uint32_t)f->bytes.size();
	}
};

// Slot s of the period connects node 0 to the nodes in open[s].
GateTables tables(const std::vector<std::set<uint32_t>> &open, uint64_t t0, uint64_t version)
{
	GateTables t;
	t.timing.t0_ns = t0;
	t.timing.slot_ns = 20'000;
	t.timing.guard_ns = 2'000;
	t.timing.period = (uint32_t)open.size();
	t.nodes = kNodes;
	t.margin_ns = 1'000;
	t.version = version;
	uint32_t p = t.timing.period;
	t.waits.assign((size_t)p * kNodes, LUMEN_SLOT_NEVER);
	for (uint32_t s = 0; s < p; s++)
		for (uint32_t d = 1; d < kNodes; d++)
			for (uint32_t k = 0; k < p; k++)
				if (open[(s + k) % p].count(d)) {
					t.waits[(size_t)s * kNodes + d] = (uint16_t)k;
					break;
				}
	return t;
}

// A random schedule of 2..5 slots in which each destination has a slot.
std::vector<std::set<uint32_t>> random_open(std::mt19937_64 &rng)
{
	std::vector<std::set<uint32_t>> open(2 + rng() % 4);
	for (uint32_t d = 1; d < kNodes; d++) {
		open[rng() % open.size()].insert(d);
		if (rng() % 3 == 0)
			open[rng() % open.size()].insert(d);
	}
	return open;
}

// Whether a frame of wire ns leaving at tai is inside a usable window,
// shrunk by the margin, of a slot of open that connects 0 to node.
bool in_window(const GateTables &t, const std::vector<std::set<uint32_t>> &open, uint32_t node, uint64_t tai,
	       uint64_t wire)
{
	const lumen_slot_timing &tm = t.timing;
	if (tai < tm.t0_ns)
		return false;
	uint64_t k = (tai - tm.t0_ns) / tm.slot_ns, start = tm.t0_ns + k * tm.slot_ns;
	return open[k % tm.period].count(node) && tai >= start + t.margin_ns &&
	       tai + wire <= start + tm.slot_ns - tm.guard_ns - t.margin_ns;
}

struct Result {
	uint64_t frames = 0, late = 0, deferred = 0, changes = 0;
};

// The shell, on a fake clock: polls every few hundred ns, late by up to
// 40 us one poll in late_per_mille; offers a message at one poll in twelve.
class Shell
{
      public:
	Shell(uint64_t seed, bool changes, uint32_t late_per_mille)
	    : rng_(seed), changes_(changes), late_(late_per_mille),
	      hold_(std::make_unique<OpticalGate>(addrs(), kRate, 10'000'000'000ull, 2'000), false)
	{
		open_.push_back(random_open(rng_));
		in_force_.push_back(tables(open_.back(), kT0, 1));
		hold_.gate().set_tables(in_force_.back());
		tai_ = kT0 + rng_() % 100'000;
	}

	// Runs kFrames offers, then polls until everything left; the checks.
	Result run(uint64_t frames)
	{
		Result r;
		uint64_t next_change = changes_ ? tai_ + 300'000 : UINT64_MAX, instant = 0, tables_in = 0;
		while (offered_ < frames || hold_.held() || hold_.deferred()) {
			tai_ += 200 + rng_() % 800;
			if (offered_ < frames && rng_() % 1000 < late_)
				tai_ += 5'000 + rng_() % 35'000; // the shell polled late
			// lumend: a change announced, then its tables, at the
			// instant or a little after it
			if (!instant && tai_ >= next_change) {
				const GateTables &now = in_force_.back();
				uint64_t period = now.timing.slot_ns * now.timing.period;
				instant = now.timing.t0_ns + ((tai_ - now.timing.t0_ns) / period + 3) * period;
				tables_in = instant + rng_() % 30'000;
				GateTables announced = now;
				announced.change_ns = instant;
				hold_.gate().set_tables(announced);
			}
			if (instant && tai_ >= tables_in) {
				open_.push_back(random_open(rng_));
				in_force_.push_back(tables(open_.back(), instant, in_force_.back().version + 1));
				hold_.gate().set_tables(in_force_.back());
				next_change = tai_ + 200'000 + rng_() % 400'000;
				instant = 0;
				r.changes++;
			}
			Out out{this};
			Tai tai{this};
			hold_.release(local(), tai, out);
			if (offered_ < frames && rng_() % 12 == 0)
				message(tai, out);
			if (tai_ > kT0 + 10'000'000'000ull) {
				ADD_FAILURE() << "frames still held after 10 s: " << hold_.held() << " held, "
					      << hold_.deferred() << " deferred";
				break;
			}
		}
		check();
		r.frames = offered_;
		r.late = hold_.gate().stats().late;
		r.deferred = hold_.gate().stats().deferred;
		return r;
	}

      private:
	struct Out {
		Shell *s;
		void send(Frame *f)
		{
			s->sent_.push_back({f, s->tai_});
		}
		void drop(Frame *f)
		{
			ADD_FAILURE() << "frame " << f->flow << "/" << f->seq << " dropped";
		}
		void folded(Frame *f)
		{
			ADD_FAILURE() << "frame " << f->flow << "/" << f->seq << " folded: no ACKs here";
		}
	};
	struct Tai {
		Shell *s;
		uint64_t operator()() const
		{
			return s->tai_;
		}
	};
	struct Sent {
		Frame *f;
		uint64_t tai;
	};

	static std::unordered_map<uint32_t, uint32_t> addrs()
	{
		std::unordered_map<uint32_t, uint32_t> m;
		for (uint32_t i = 0; i < kNodes; i++)
			m[kAddr + i] = i;
		return m;
	}
	uint64_t local() const
	{
		return tai_ - kT0 + kLocal;
	}
	// A message of one of the three flows to a random destination, as the
	// transport sends it in one poll: up to five full frames and a shorter
	// last one (which may fit what is left of a window where a full one
	// does not).
	void message(Tai &tai, Out &out)
	{
		uint32_t node = 1 + (uint32_t)(rng_() % (kNodes - 1)), flow = node * 3 + (uint32_t)(rng_() % 3);
		for (uint32_t full = (uint32_t)(rng_() % 6), i = 0; i <= full; i++) {
			Frame *f = make(node, flow, i < full ? 1514 : 64 + (uint32_t)(rng_() % 1451));
			if (!hold_.offer(f, local(), tai, out))
				out.send(f);
		}
	}
	// A frame of len bytes: an IPv4 header far enough to name its node.
	Frame *make(uint32_t node, uint32_t flow, uint32_t len)
	{
		auto f = std::make_unique<Frame>();
		f->node = node;
		f->flow = flow;
		f->seq = next_seq_[f->flow]++;
		f->bytes.assign(len, 0);
		f->bytes[12] = 0x08;
		uint32_t ip = kAddr + f->node;
		for (int i = 0; i < 4; i++)
			f->bytes[30 + i] = (uint8_t)(ip >> (24 - 8 * i));
		frames_.push_back(std::move(f));
		offered_++;
		return frames_.back().get();
	}
	// Every frame left once, in its flow's order, inside a window.
	void check()
	{
		std::map<uint32_t, uint32_t> next; // by flow: the seq expected
		std::set<const Frame *> seen;
		for (const Sent &s : sent_) {
			EXPECT_TRUE(seen.insert(s.f).second)
				<< "frame " << s.f->flow << "/" << s.f->seq << " sent twice";
			EXPECT_EQ(s.f->seq, next[s.f->flow]) << "flow " << s.f->flow << " reordered at " << s.tai;
			next[s.f->flow] = s.f->seq + 1;
			size_t k = in_force_.size() - 1;
			while (k > 0 && in_force_[k].timing.t0_ns > s.tai)
				k--;
			uint64_t wire = lumen_wire_ns((uint32_t)s.f->bytes.size(), kRate);
			EXPECT_TRUE(in_window(in_force_[k], open_[k], s.f->node, s.tai, wire))
				<< "frame " << s.f->flow << "/" << s.f->seq << " left at " << s.tai
				<< " outside a window";
		}
		EXPECT_EQ(sent_.size(), offered_) << "frames lost";
	}

	std::mt19937_64 rng_;
	bool changes_;
	uint32_t late_;
	GateHold<Frame *, Frames> hold_;
	uint64_t tai_ = 0, offered_ = 0;
	std::vector<std::vector<std::set<uint32_t>>> open_; // by schedule
	std::vector<GateTables> in_force_; // each from its t0 on
	std::vector<std::unique_ptr<Frame>> frames_;
	std::map<uint32_t, uint32_t> next_seq_;
	std::vector<Sent> sent_;
};

// By hand: node 1 in every slot (20 us, 2 us guard at the end, 1 us
// margins: windows [1, 17) us of each), a change at 20 us. At 16.5 us a
// full frame (1.231 us on the wire) no longer fits before the instant and
// is deferred; a short one behind it (71 ns) would still fit, and must not
// go first: it is deferred too. A late release then takes both along.
TEST(DpGateHold, AFrameBehindADeferredOneWaitsForIt)
{
	struct Out {
		std::vector<uint32_t> sent; // seqs
		void send(Frame *f)
		{
			sent.push_back(f->seq);
		}
		void drop(Frame *)
		{
			ADD_FAILURE() << "dropped";
		}
		void folded(Frame *)
		{
			ADD_FAILURE() << "folded";
		}
	} out;
	uint64_t tai = kT0 + 16'500;
	auto clock = [&tai] { return tai; };
	auto frame = [](uint32_t seq, uint32_t len) {
		Frame f{std::vector<uint8_t>(len, 0), 1, 3, seq};
		f.bytes[12] = 0x08;
		f.bytes[30] = 10; // 10.0.0.2: node 1
		f.bytes[33] = 2;
		return f;
	};
	std::unordered_map<uint32_t, uint32_t> addrs{{kAddr, 0}, {kAddr + 1, 1}};
	GateHold<Frame *, Frames> hold(std::make_unique<OpticalGate>(addrs, kRate, 1'000'000'000), false);
	GateTables t = tables({{1}}, kT0, 1);
	t.nodes = 2;
	t.waits = {LUMEN_SLOT_NEVER, 0};
	t.change_ns = kT0 + 20'000;
	hold.gate().set_tables(t);
	Frame full = frame(0, 1514), tail = frame(1, 64), a = frame(2, 1514), b = frame(3, 1514), next = frame(4, 64);
	EXPECT_TRUE(hold.offer(&full, tai, clock, out));
	EXPECT_TRUE(hold.offer(&tail, tai, clock, out));
	EXPECT_TRUE(out.sent.empty()) << "the short frame went ahead of the full one";
	EXPECT_EQ(hold.deferred(), 2u);
	EXPECT_EQ(hold.gate().stats().deferred, 2u);
	// the new tables (node 1 in every slot again), from the instant on
	tai = kT0 + 21'500;
	t.timing.t0_ns = kT0 + 20'000;
	t.change_ns = 0;
	t.version = 2;
	hold.gate().set_tables(t);
	hold.release(tai, clock, out); // the full one at once, the short one after it
	tai = kT0 + 23'000;
	hold.release(tai, clock, out);
	EXPECT_EQ(out.sent, (std::vector<uint32_t>{0, 1}));
	// a late release: booked again with what is behind it to its node,
	// the frames deferred to it included, in order
	tai = kT0 + 36'000;
	EXPECT_TRUE(hold.offer(&a, tai, clock, out)); // the next window: 41 us
	t.change_ns = kT0 + 60'000;
	hold.gate().set_tables(t);
	tai = kT0 + 56'500;
	EXPECT_TRUE(hold.offer(&b, tai, clock, out)); // not before the instant: deferred
	EXPECT_TRUE(hold.offer(&next, tai, clock, out));
	EXPECT_EQ(hold.held(), 1u);
	EXPECT_EQ(hold.deferred(), 2u);
	hold.release(tai, clock, out); // a's window closed at 57 us - 1.231 us: late
	EXPECT_EQ(hold.gate().stats().late, 1u);
	EXPECT_EQ(out.sent.size(), 2u);
	EXPECT_EQ(hold.deferred(), 3u); // a, then b and next behind it
	tai = kT0 + 61'000;
	t.timing.t0_ns = kT0 + 60'000;
	t.change_ns = 0;
	t.version = 3;
	hold.gate().set_tables(t);
	hold.release(tai, clock, out);
	tai = kT0 + 65'000;
	hold.release(tai, clock, out);
	EXPECT_EQ(out.sent, (std::vector<uint32_t>{0, 1, 2, 3, 4}));
}

TEST(DpGateHold, LateReleasesAreBookedAgainAndNoFlowIsReordered)
{
	uint64_t late = 0, frames = 0;
	for (uint64_t seed = 1; seed <= 20; seed++) {
		Result r = Shell(seed, false, 20).run(3'000);
		if (HasFailure()) {
			ADD_FAILURE() << "seed " << seed;
			return;
		}
		late += r.late;
		frames += r.frames;
	}
	EXPECT_GT(late, 500u) << "late releases: the test must make some";
	RecordProperty("late", std::to_string(late));
	RecordProperty("frames", std::to_string(frames));
}

TEST(DpGateHold, AcrossScheduleChangesNoFlowIsReordered)
{
	uint64_t late = 0, deferred = 0, changes = 0;
	for (uint64_t seed = 1; seed <= 20; seed++) {
		Result r = Shell(100 + seed, true, 20).run(3'000);
		if (HasFailure()) {
			ADD_FAILURE() << "seed " << 100 + seed;
			return;
		}
		late += r.late;
		deferred += r.deferred;
		changes += r.changes;
	}
	EXPECT_GT(changes, 50u);
	EXPECT_GT(deferred, 100u);
	EXPECT_GT(late, 500u);
	RecordProperty("late", std::to_string(late));
	RecordProperty("deferred", std::to_string(deferred));
	RecordProperty("changes", std::to_string(changes));
}

} // namespace

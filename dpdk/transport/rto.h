// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// dpdk/transport/rto.h - the retransmission timeout of RFC 6298, in ns.
//
// From RTT samples R (ns) the estimator keeps a smoothed RTT and its mean
// deviation:
//   first sample   SRTT = R, RTTVAR = R / 2
//   later samples  RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R|   (beta = 1/4, with
//                  the SRTT before this sample)
//                  SRTT = 7/8 SRTT + 1/8 R                (alpha = 1/8)
//   RTO = SRTT + max(G, K * RTTVAR), K = 4, clamped to [min_ns, max_ns]
// G is the clock granularity: the timer that enforces the RTO fires up to G
// late (the timer wheel's tick), so a variance below it must not make the
// RTO tighter than the clock can keep. Before any sample the RTO is
// initial_ns.
//
// Each expiry of the timer calls backoff(), which doubles the RTO (RFC 6298
// 5.5) up to max_ns; the next sample resets the doubling (5.7: a new RTT
// sample after the retransmission is acknowledged). Integer arithmetic: in
// ns the truncation of the divisions by 4 and 8 loses under 1 ns per sample.
// Samples are clamped to 2^40 ns (18 minutes) so 7 * SRTT cannot overflow.
//
// The datacenter defaults (min 200 us, max 100 ms) replace RFC 6298's 1 s
// minimum, meant for WAN clocks and delayed ACKs. min_rtt_ns() is the
// smallest sample since reset() (for the congestion controls' base RTT).
#pragma once

#include <cstdint>
#include <stdexcept>

namespace lumen::dp
{

struct RtoParams {
	uint64_t min_ns = 200'000; // 200 us
	uint64_t max_ns = 100'000'000; // 100 ms
	uint64_t initial_ns = 1'000'000; // before the first sample: 1 ms
	uint64_t granularity_ns = 1'000; // G: the timer's resolution

	// nullptr when usable, else what is wrong.
	const char *validate() const
	{
		if (min_ns == 0)
			return "rto: min_ns must be > 0";
		if (max_ns < min_ns)
			return "rto: max_ns must be >= min_ns";
		if (max_ns > (1ull << 40))
			return "rto: max_ns must be <= 2^40 ns";
		if (initial_ns < min_ns || initial_ns > max_ns)
			return "rto: initial_ns must be within [min_ns, max_ns]";
		if (granularity_ns > max_ns)
			return "rto: granularity_ns must be <= max_ns";
		return nullptr;
	}
};

class RtoEstimator
{
      public:
	static constexpr uint64_t kMaxSampleNs = 1ull << 40;

	// Throws std::invalid_argument when params.validate() refuses them.
	explicit RtoEstimator(const RtoParams &params = RtoParams{}) : p_(params)
	{
		if (const char *err = p_.validate())
			throw std::invalid_argument(err);
		reset();
	}

	// Back to "no sample yet".
	void reset()
	{
		srtt_ = rttvar_ = latest_ = min_rtt_ = 0;
		has_sample_ = false;
		backoffs_ = 0;
		base_rto_ = p_.initial_ns;
	}

	// One RTT measurement, in ns.
	void sample(uint64_t rtt_ns)
	{
		uint64_t r = rtt_ns < kMaxSampleNs ? rtt_ns : kMaxSampleNs;

		if (!has_sample_) {
			srtt_ = r;
			rttvar_ = r / 2;
			min_rtt_ = r;
			has_sample_ = true;
		} else {
			uint64_t err = srtt_ > r ? srtt_ - r : r - srtt_;

			rttvar_ = (3 * rttvar_ + err) / 4;
			srtt_ = (7 * srtt_ + r) / 8;
			if (r < min_rtt_)
				min_rtt_ = r;
		}
		latest_ = r;
		backoffs_ = 0;
		uint64_t var = 4 * rttvar_ > p_.granularity_ns ? 4 * rttvar_ : p_.granularity_ns;

		base_rto_ = clamp(srtt_ + var);
	}

	// The timer expired: double the RTO, up to max_ns.
	void backoff()
	{
		if (rto_ns() < p_.max_ns)
			backoffs_++;
	}

	// The current timeout: SRTT + max(G, 4 RTTVAR) clamped, doubled per
	// backoff() since the last sample, at most max_ns.
	uint64_t rto_ns() const
	{
		if (backoffs_ >= 63 || base_rto_ > (p_.max_ns >> backoffs_))
			return p_.max_ns;
		return base_rto_ << backoffs_;
	}

	bool has_sample() const
	{
		return has_sample_;
	}
	// 0 until the first sample.
	uint64_t srtt_ns() const
	{
		return srtt_;
	}
	uint64_t rttvar_ns() const
	{
		return rttvar_;
	}
	uint64_t latest_ns() const
	{
		return latest_;
	}
	uint64_t min_rtt_ns() const
	{
		return min_rtt_;
	}
	// backoff() calls since the last sample that doubled the RTO.
	uint32_t backoffs() const
	{
		return backoffs_;
	}
	const RtoParams &params() const
	{
		return p_;
	}

      private:
	uint64_t clamp(uint64_t v) const
	{
		return v < p_.min_ns ? p_.min_ns : (v > p_.max_ns ? p_.max_ns : v);
	}

	RtoParams p_;
	uint64_t srtt_ = 0, rttvar_ = 0, latest_ = 0, min_rtt_ = 0;
	uint64_t base_rto_ = 0; // clamped RTO before backoff
	uint32_t backoffs_ = 0;
	bool has_sample_ = false;
};

} // namespace lumen::dp

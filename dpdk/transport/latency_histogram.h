/*
 * latency_histogram.h - completion times in fixed memory: a log-linear
 * histogram of the HDR kind.
 *
 * A run of lumen-dp can last a day and complete hundreds of millions of
 * messages; keeping every completion time would grow a vector on the lcore
 * (a reallocation of gigabytes in the datapath's loop) and sort it at the
 * end. Percentiles do not need every value, only its magnitude to a known
 * precision, so values are counted in buckets: values below 2^kSubBits are
 * their own bucket, above that every power of two [2^e, 2^(e+1)) is cut
 * into 2^(kSubBits-1) equal buckets. A bucket is then at most 1/64 of the
 * values it holds wide (1.6 %), from 1 ns to 2^64 ns, in 3,776 counters
 * (30 KB), fixed at construction: record() is a count-leading-zeros, a
 * shift and an increment. Quantiles answer the upper end of the bucket
 * that holds the nearest-rank value, never above the largest value
 * recorded (kept exactly, with the smallest and the sum), so a quantile
 * is never below the true one and at most 1.6 % above it.
 */
#ifndef LUMEN_DP_LATENCY_HISTOGRAM_H
#define LUMEN_DP_LATENCY_HISTOGRAM_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lumen::dp
{

class LatencyHistogram
{
      public:
	static constexpr unsigned kSubBits = 7; /* 128 exact values */
	static constexpr size_t kHalf = size_t(1) << (kSubBits - 1); /* buckets per power of two */
	static constexpr size_t kBuckets = (64 - kSubBits + 2) * kHalf; /* 3,776 */

	LatencyHistogram() : counts_(kBuckets, 0)
	{
	}

	void record(uint64_t v)
	{
		counts_[bucket_of(v)]++;
		count_++;
		sum_ += (double)v;
		if (v > max_)
			max_ = v;
		if (v < min_)
			min_ = v;
	}
	/* Add another histogram's values (the queues of a host, the hosts of a run). */
	void merge(const LatencyHistogram &o);

	uint64_t count() const
	{
		return count_;
	}
	uint64_t max() const
	{
		return count_ ? max_ : 0;
	}
	uint64_t min() const
	{
		return count_ ? min_ : 0;
	}
	double mean() const
	{
		return count_ ? sum_ / (double)count_ : 0;
	}
	/* The q-quantile (0..1, nearest rank) to the bucket's precision; 0 when empty. */
	uint64_t quantile(double q) const;

	/* Where v is counted, and the largest value that bucket holds. */
	static size_t bucket_of(uint64_t v)
	{
		if (v < (uint64_t(1) << kSubBits))
			return (size_t)v;
		unsigned e = 63 - (unsigned)__builtin_clzll(v); /* >= kSubBits */
		unsigned shift = e - kSubBits + 1;
		return (size_t)(e - kSubBits + 2) * kHalf + (size_t)((v >> shift) - kHalf);
	}
	static uint64_t bucket_top(size_t b);

      private:
	std::vector<uint64_t> counts_;
	uint64_t count_ = 0, max_ = 0, min_ = UINT64_MAX;
	double sum_ = 0; /* for the mean: cannot overflow */
};

} // namespace lumen::dp

#endif

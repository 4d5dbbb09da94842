#include "transport/latency_histogram.h"

#include <cmath>

namespace lumen::dp
{

void LatencyHistogram::merge(const LatencyHistogram &o)
{
	for (size_t b = 0; b < kBuckets; b++)
		counts_[b] += o.counts_[b];
	count_ += o.count_;
	sum_ += o.sum_;
	if (o.count_) {
		max_ = o.max_ > max_ ? o.max_ : max_;
		min_ = o.min_ < min_ ? o.min_ : min_;
	}
}

uint64_t LatencyHistogram::bucket_top(size_t b)
{
	if (b < (size_t(1) << kSubBits))
		return b;
	size_t group = b / kHalf; /* >= 2: the power of two 2^(group + kSubBits - 2) */
	unsigned shift = (unsigned)group - 1;
	uint64_t top = b % kHalf + kHalf; /* the value's top kSubBits bits */
	/* (top + 1) << shift - 1 without overflowing at 2^64 */
	return (top << shift) + ((uint64_t(1) << shift) - 1);
}

uint64_t LatencyHistogram::quantile(double q) const
{
	if (!count_)
		return 0;
	if (!(q > 0))
		return min_;
	if (q >= 1)
		return max_;
	/* nearest rank: the smallest value with at least ceil(q n) values at or below it */
	auto rank = (uint64_t)std::ceil(q * (double)count_);
	rank = rank < 1 ? 1 : rank;
	uint64_t seen = 0;
	for (size_t b = 0; b < kBuckets; b++) {
		seen += counts_[b];
		if (seen >= rank) {
			uint64_t top = bucket_top(b);
			return top < max_ ? (top > min_ ? top : min_) : max_;
		}
	}
	return max_;
}

} // namespace lumen::dp

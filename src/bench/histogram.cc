#include "bench/histogram.h"

#include <bit>
#include <cmath>

namespace mc::bench {

// Values below kSubBuckets get one bucket each (exponent 0); above, the
// exponent is the position of the top bit past kSubBits and the next
// kSubBits bits pick the linear sub-bucket.
size_t LatencyHistogram::Index(uint64_t ns) {
  if (ns < kSubBuckets) return ns;
  int top = 63 - std::countl_zero(ns);
  int exponent = top - kSubBits + 1;
  if (exponent > kMaxExponent) return (kMaxExponent + 1) * kSubBuckets - 1;
  uint64_t sub = (ns >> (exponent - 1)) & (kSubBuckets - 1);
  return static_cast<size_t>(exponent) * kSubBuckets + sub;
}

uint64_t LatencyHistogram::UpperBound(size_t index) {
  uint64_t exponent = index / kSubBuckets;
  uint64_t sub = index % kSubBuckets;
  if (exponent == 0) return sub;
  return ((kSubBuckets + sub + 1) << (exponent - 1)) - 1;
}

void LatencyHistogram::Record(uint64_t ns) {
  ++buckets_[Index(ns)];
  ++count_;
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
}

uint64_t LatencyHistogram::Percentile(double q) const {
  if (count_ == 0) return 0;
  auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  if (rank == 0) rank = 1;
  uint64_t seen = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank) return UpperBound(i);
  }
  return UpperBound(buckets_.size() - 1);
}

}  // namespace mc::bench

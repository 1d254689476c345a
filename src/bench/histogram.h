// LatencyHistogram: fixed-size log-linear histogram of latencies in
// nanoseconds, for the bench's p50/p90/p99/p999. Each power of two is split
// into kSubBuckets linear buckets, so a percentile is within 1/kSubBuckets
// (~3%) of the true value while memory stays constant however many ops run.
// Not thread-safe: one per worker thread, merged at the end.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace mc::bench {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 5;
  static constexpr uint64_t kSubBuckets = 1u << kSubBits;
  static constexpr int kMaxExponent = 40;  // ~1100 s; slower samples land in the last bucket

  void Record(uint64_t ns);
  void Merge(const LatencyHistogram& other);
  uint64_t count() const { return count_; }
  // The latency at quantile q (0 < q <= 1), in nanoseconds; 0 when empty.
  uint64_t Percentile(double q) const;

 private:
  static size_t Index(uint64_t ns);
  static uint64_t UpperBound(size_t index);

  std::array<uint64_t, (kMaxExponent + 1) * kSubBuckets> buckets_{};
  uint64_t count_ = 0;
};

}  // namespace mc::bench

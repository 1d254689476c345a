// LatencyHistogram: percentiles within the bucket precision of the exact
// ones, merging adds, an empty histogram reports 0.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "bench/histogram.h"

using mc::bench::LatencyHistogram;

TEST_CASE("percentiles are within 1/32 above the exact value") {
  uint64_t seed = std::random_device{}();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> values;
  LatencyHistogram h;
  for (int i = 0; i < 20000; ++i) {
    uint64_t v = rng() % (1ull << (rng() % 34));
    values.push_back(v);
    h.Record(v);
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.5, 0.9, 0.99, 0.999, 1.0}) {
    uint64_t exact = values[static_cast<size_t>(std::ceil(q * values.size())) - 1];
    uint64_t got = h.Percentile(q);
    CAPTURE(q);
    CHECK(got >= exact);
    CHECK(double(got) <= double(exact) * (1.0 + 1.0 / 32) + 1);
  }
}

TEST_CASE("merging two histograms counts both; empty reports zero") {
  LatencyHistogram a, b, empty;
  CHECK(empty.Percentile(0.99) == 0);
  for (uint64_t v = 1; v <= 100; ++v) a.Record(v);
  for (uint64_t v = 1000; v < 1100; ++v) b.Record(v);
  a.Merge(b);
  CHECK(a.count() == 200);
  CHECK(a.Percentile(0.5) >= 100);
  CHECK(a.Percentile(0.5) <= 103);
  CHECK(a.Percentile(1.0) >= 1099);
}

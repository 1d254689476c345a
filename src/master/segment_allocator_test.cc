#include "common/test_seed.h"
#include "master/segment_allocator.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using mc::master::SegmentAllocator;

namespace {

constexpr uint64_t kUnit = SegmentAllocator::kAlignmentBytes;

// The trivially correct model: one bool per allocation unit.
struct BitmapModel {
  std::vector<bool> used;
  explicit BitmapModel(uint64_t units) : used(units, false) {}
  bool AllFree(uint64_t first, uint64_t n) const {
    for (uint64_t i = first; i < first + n; ++i)
      if (used[i]) return false;
    return true;
  }
  void Set(uint64_t first, uint64_t n, bool value) {
    for (uint64_t i = first; i < first + n; ++i) used[i] = value;
  }
  uint64_t LongestRun() const {
    uint64_t best = 0, run = 0;
    for (bool u : used) {
      run = u ? 0 : run + 1;
      best = std::max(best, run);
    }
    return best;
  }
  uint64_t Runs() const {
    uint64_t runs = 0;
    for (size_t i = 0; i < used.size(); ++i)
      if (!used[i] && (i == 0 || used[i - 1])) ++runs;
    return runs;
  }
  uint64_t FreeUnits() const {
    uint64_t n = 0;
    for (bool u : used) n += !u;
    return n;
  }
};

}  // namespace

TEST_CASE("allocations are aligned, disjoint and freed ranges coalesce") {
  SegmentAllocator a(1000);
  CHECK(a.capacity_bytes() == 960);
  auto x = a.Allocate(1);
  auto y = a.Allocate(65);
  auto z = a.Allocate(64);
  REQUIRE(x);
  REQUIRE(y);
  REQUIRE(z);
  CHECK(*x == 0);
  CHECK(*y == 64);
  CHECK(*z == 192);
  CHECK(a.used_bytes() == 256);
  CHECK(a.Free(*y, 65) == 128);
  CHECK(a.free_range_count() == 2);
  CHECK(a.Free(*x, 1) == 192);
  CHECK(a.Free(*z, 64) == 960);
  CHECK(a.free_range_count() == 1);
  CHECK(a.free_bytes() == 960);
}

TEST_CASE("allocation picks the smallest hole that fits") {
  SegmentAllocator a(64 * 10);
  std::vector<uint64_t> off;
  for (int i = 0; i < 10; ++i) off.push_back(*a.Allocate(64));
  CHECK_FALSE(a.Allocate(1));
  a.Free(off[1], 64);                       // hole of 1 unit at 1
  a.Free(off[4], 64); a.Free(off[5], 64);   // hole of 2 units at 4
  a.Free(off[7], 64); a.Free(off[8], 64); a.Free(off[9], 64);  // 3 units at 7
  CHECK(*a.Allocate(128) == off[4]);
  CHECK(*a.Allocate(64) == off[1]);
  CHECK(*a.Allocate(64 * 3) == off[7]);
  CHECK(a.free_bytes() == 0);
}

TEST_CASE("reserve carves an exact range and refuses anything not free") {
  SegmentAllocator a(64 * 8);
  CHECK(a.Reserve(128, 100));
  CHECK_FALSE(a.Reserve(192, 64));   // overlaps the reserved 128..256
  CHECK_FALSE(a.Reserve(100, 64));   // misaligned
  CHECK_FALSE(a.Reserve(448, 128));  // past the end
  CHECK(a.Reserve(448, 64));
  CHECK(a.free_range_count() == 2);
  CHECK(a.IsFree(0, 128));
  CHECK_FALSE(a.IsFree(0, 129));
}

TEST_CASE("randomized allocate, free and reserve agree with a bitmap model") {
  const uint64_t seed = mc::TestSeed("allocator test");
  std::mt19937_64 rng(seed);
  const uint64_t units = 4096;
  SegmentAllocator a(units * kUnit + 17);
  BitmapModel model(units);
  std::vector<std::pair<uint64_t, uint64_t>> live;  // offset, requested size
  for (int step = 0; step < 20000; ++step) {
    CAPTURE(seed);
    CAPTURE(step);
    const int op = static_cast<int>(rng() % 10);
    if (op < 5) {
      const uint64_t size = 1 + rng() % (rng() % 4 == 0 ? 64 * kUnit : 4 * kUnit);
      const uint64_t n = (size + kUnit - 1) / kUnit;
      auto got = a.Allocate(size);
      if (!got) {
        REQUIRE(model.LongestRun() < n);  // it fails only when no hole fits
        continue;
      }
      REQUIRE(*got % kUnit == 0);
      REQUIRE(model.AllFree(*got / kUnit, n));
      model.Set(*got / kUnit, n, true);
      live.emplace_back(*got, size);
    } else if (op < 9 && !live.empty()) {
      const size_t i = rng() % live.size();
      const auto [off, size] = live[i];
      a.Free(off, size);
      model.Set(off / kUnit, (size + kUnit - 1) / kUnit, false);
      live[i] = live.back();
      live.pop_back();
    } else {
      const uint64_t first = rng() % units;
      const uint64_t n = 1 + rng() % 8;
      const bool fits = first + n <= units && model.AllFree(first, n);
      REQUIRE(a.Reserve(first * kUnit, n * kUnit) == fits);
      if (fits) {
        model.Set(first, n, true);
        live.emplace_back(first * kUnit, n * kUnit);
      }
    }
    REQUIRE(a.free_bytes() == model.FreeUnits() * kUnit);
    REQUIRE(a.used_bytes() + a.free_bytes() == a.capacity_bytes());
    const mc::Status invariants = a.CheckInvariants();
    REQUIRE_MESSAGE(invariants.ok(), invariants.message());
    for (const auto& [off, size] : live) REQUIRE(a.IsUsed(off, size));
    if (step % 64 == 0) {
      REQUIRE(a.free_range_count() == model.Runs());  // fully coalesced
      REQUIRE(a.largest_free_bytes() == model.LongestRun() * kUnit);
    }
  }
}

TEST_CASE("objects of 64 KiB or more start on a page and the gap before them stays free") {
  constexpr uint64_t kPage = SegmentAllocator::kPageBytes;
  SegmentAllocator a(1 << 20);
  REQUIRE(a.Allocate(100) == 0u);
  const uint64_t big = SegmentAllocator::kPageAlignFromBytes + 5;
  auto x = a.Allocate(big);
  REQUIRE(x);
  CHECK(*x == kPage);
  CHECK(a.IsFree(128, kPage - 128));
  CHECK(a.used_bytes() == 128 + SegmentAllocator::AlignUp(big));
  // A small object takes the best fit: the gap before the large one.
  CHECK(a.Allocate(200) == 128u);
  // One byte under the threshold: the next 64 bytes.
  const uint64_t end = *x + SegmentAllocator::AlignUp(big);
  CHECK(a.Allocate(SegmentAllocator::kPageAlignFromBytes - 1) == end);
  // A hole that holds the size but not at a page is passed over for one that does.
  const uint64_t t = SegmentAllocator::kPageAlignFromBytes;
  SegmentAllocator b(2 * t + 2 * kPage);
  REQUIRE(b.Reserve(0, 64));
  REQUIRE(b.Reserve(t + 64, 64));  // [64, t + 64) holds t, but only at 64
  CHECK(b.Allocate(t) == t + kPage);
  CHECK(b.IsFree(64, t));
  CHECK_FALSE(b.Allocate(t));
  CHECK(b.CheckInvariants().ok());
  // Turned off, the same object goes right behind the small one.
  SegmentAllocator c(1 << 20, UINT64_MAX);
  REQUIRE(c.Allocate(100) == 0u);
  CHECK(c.Allocate(big) == 128u);
}

TEST_CASE("randomized large and small objects: pages for the large, and a refusal only when no hole holds one") {
  const uint64_t seed = mc::TestSeed("allocator page test");
  std::mt19937_64 rng(seed);
  constexpr uint64_t kPageUnits = SegmentAllocator::kPageBytes / kUnit;
  const uint64_t units = 16384;  // 1 MiB
  SegmentAllocator a(units * kUnit);
  BitmapModel model(units);
  auto page_fit = [&](uint64_t n) {  // a free run that holds n units from a page
    for (uint64_t first = 0; first + n <= units; first += kPageUnits)
      if (model.AllFree(first, n)) return true;
    return false;
  };
  std::vector<std::pair<uint64_t, uint64_t>> live;
  for (int step = 0; step < 4000; ++step) {
    CAPTURE(seed);
    CAPTURE(step);
    if (rng() % 10 < 6) {
      const bool large = rng() % 3 == 0;
      const uint64_t size = large ? SegmentAllocator::kPageAlignFromBytes + rng() % (64 * kUnit * 16)
                                  : 1 + rng() % (16 * kUnit);
      const uint64_t n = (size + kUnit - 1) / kUnit;
      auto got = a.Allocate(size);
      if (!got) {
        REQUIRE((large ? !page_fit(n) : model.LongestRun() < n));
        continue;
      }
      if (large) REQUIRE(*got % SegmentAllocator::kPageBytes == 0);
      REQUIRE(model.AllFree(*got / kUnit, n));
      model.Set(*got / kUnit, n, true);
      live.emplace_back(*got, size);
    } else if (!live.empty()) {
      const size_t i = rng() % live.size();
      a.Free(live[i].first, live[i].second);
      model.Set(live[i].first / kUnit, (live[i].second + kUnit - 1) / kUnit, false);
      live[i] = live.back();
      live.pop_back();
    }
    if (step % 16 == 0) {
      REQUIRE(a.free_bytes() == model.FreeUnits() * kUnit);
      REQUIRE(a.CheckInvariants().ok());
    }
  }
}

namespace {
// A churned segment's fill at each refusal: large (KV blocks, not page
// multiples) and small objects put until one is refused, then a tenth of
// them removed at random, `rounds` times. The mean used share at a refusal.
double FillAtRefusal(uint64_t page_align_from, uint64_t seed, int rounds) {
  std::mt19937_64 rng(seed);
  SegmentAllocator a(256ull << 20, page_align_from);
  std::vector<std::pair<uint64_t, uint64_t>> live;
  double sum = 0;
  for (int r = 0; r < rounds; ++r) {
    for (;;) {
      const uint64_t size = rng() % 4 == 0 ? 64 + rng() % (16u << 10)
                                           : (64u << 10) + rng() % (2u << 20);
      auto got = a.Allocate(size);
      if (!got) break;
      live.emplace_back(*got, size);
    }
    sum += static_cast<double>(a.used_bytes()) / static_cast<double>(a.capacity_bytes());
    std::shuffle(live.begin(), live.end(), rng);
    for (size_t k = live.size() / 10; k > 0; --k) {
      a.Free(live.back().first, live.back().second);
      live.pop_back();
    }
  }
  return sum / rounds;
}
}  // namespace

TEST_CASE("large objects on pages cost little space in a churned segment") {
  const uint64_t seed = mc::TestSeed("allocator page fill");
  const double paged = FillAtRefusal(SegmentAllocator::kPageAlignFromBytes, seed, 200);
  const double packed = FillAtRefusal(UINT64_MAX, seed, 200);
  MESSAGE("used share of a 256 MiB segment at a refusal: large objects on pages "
          << paged * 100 << "%, on 64 bytes " << packed * 100 << "% (seed " << seed << ")");
  CHECK(paged > packed - 0.02);
}

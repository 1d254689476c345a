#include "transfer/rdma/rdma_plan.h"

#include <doctest/doctest.h>

#include <map>
#include <random>

#include "common/test_seed.h"

using namespace mc::transfer;

TEST_CASE("slices cover a transfer exactly, none larger than the slice size") {
  std::mt19937_64 rng(mc::TestSeed("rdma slices"));
  for (int round = 0; round < 200; ++round) {
    const uint64_t len = 1 + rng() % (1 << 22);
    const uint64_t slice = 1 + rng() % (1 << 20);
    const uint64_t boundary = 1 + rng() % (1 << 21);  // a region edge every `boundary` bytes
    auto room = [&](uint64_t off) { return boundary - off % boundary; };
    auto s = CutSlices(len, slice, room);
    uint64_t next = 0;
    for (const auto& r : s) {
      REQUIRE(r.offset == next);
      REQUIRE(r.len > 0);
      REQUIRE(r.len <= slice);
      // Never across a region edge.
      REQUIRE(r.offset / boundary == (r.offset + r.len - 1) / boundary);
      next += r.len;
    }
    REQUIRE(next == len);
  }
}

TEST_CASE("a transfer smaller than a slice is one slice") {
  auto s = CutSlices(100, 1 << 20, [](uint64_t) { return UINT64_MAX; });
  REQUIRE(s.size() == 1);
  CHECK(s[0].len == 100);
}

TEST_CASE("consecutive slices alternate NICs first, then QPs") {
  LaneScheduler s(2, 3, 100);  // lane = nic * 3 + qp
  std::vector<int> picks;
  for (int i = 0; i < 6; ++i) picks.push_back(s.Pick());
  CHECK(picks == std::vector<int>{0, 3, 1, 4, 2, 5});
}

TEST_CASE("a lane never carries more than its outstanding bound") {
  LaneScheduler s(1, 2, 3);
  std::map<int, int> count;
  for (int i = 0; i < 6; ++i) count[s.Pick()]++;
  CHECK(count[0] == 3);
  CHECK(count[1] == 3);
  CHECK(s.Pick() == -1);
  s.Done(1);
  CHECK(s.Pick() == 1);
}

TEST_CASE("a retried slice goes to another lane, and a broken lane is skipped") {
  LaneScheduler s(2, 1, 10);
  CHECK(s.Pick(0) == 1);
  CHECK(s.Pick(0) == 1);
  s.MarkBroken(1);
  // Only lane 0 is healthy: the retry may use it even though it failed there.
  CHECK(s.Pick(0) == 0);
  CHECK(s.AnyHealthy());
  s.MarkBroken(0);
  CHECK(!s.AnyHealthy());
  CHECK(s.Pick() == -1);
}

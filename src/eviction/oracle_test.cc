// The admission-oracle yardsticks: on hand-made traces where a dead chain
// would push out a reused one, skipping what is never used again keeps the
// reused chain; nothing else changes.
#include <doctest/doctest.h>

#include "eviction/oracle.h"
#include "eviction/trace.h"

using namespace mc::bench;

namespace {

Trace Requests(std::initializer_list<std::vector<uint64_t>> chains) {
  Trace t;
  for (const auto& ids : chains) t.requests.push_back(TraceRequest{.hash_ids = ids});
  return t;
}

}  // namespace

TEST_CASE("next uses name the next request holding each block, or never") {
  Trace t = Requests({{1, 2}, {3}, {1, 4}});
  auto next = NextUses(t);
  REQUIRE(next.size() == 3);
  CHECK(next[0] == std::vector<uint64_t>{2, kNeverAgain});
  CHECK(next[1] == std::vector<uint64_t>{kNeverAgain});
  CHECK(next[2] == std::vector<uint64_t>{kNeverAgain, kNeverAgain});
}

TEST_CASE("bypassing dead blocks keeps a reused chain that LRU loses to a one-shot one") {
  // Capacity 2: chain 1 2 comes back after the one-shot chain 7 8, which
  // LRU stores over it; the oracles never store 7 8.
  Trace t = Requests({{1, 2}, {7, 8}, {1, 2}});
  CHECK(ExactLruHitRatio(t, 2) == doctest::Approx(0.0));
  CHECK(DeadBlockBypassLruHitRatio(t, 2) == doctest::Approx(2.0 / 6.0));
  CHECK(OneShotChainBypassLruHitRatio(t, 2) == doctest::Approx(2.0 / 6.0));
}

TEST_CASE("the chain oracle stores a continued chain's blocks even when one is dead") {
  // Block 3 is dead after request 0, but its chain head 1 comes back: the
  // chain oracle stores 3, which at capacity 2 evicts the least recent
  // block, the head, so request 1 hits nothing; the dead-block oracle skips
  // 3 and hits 1 2.
  Trace t = Requests({{1, 2, 3}, {1, 2}});
  CHECK(OneShotChainBypassLruHitRatio(t, 2) == doctest::Approx(0.0));
  CHECK(DeadBlockBypassLruHitRatio(t, 2) == doctest::Approx(2.0 / 5.0));
}

TEST_CASE("with room for everything the oracles equal exact LRU") {
  Trace t = Requests({{1, 2}, {7, 8}, {1, 2, 5}, {7}});
  CHECK(DeadBlockBypassLruHitRatio(t, 100) == doctest::Approx(ExactLruHitRatio(t, 100)));
  CHECK(OneShotChainBypassLruHitRatio(t, 100) == doctest::Approx(ExactLruHitRatio(t, 100)));
}

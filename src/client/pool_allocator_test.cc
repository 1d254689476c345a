#include "client/pool_allocator.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <random>

#include "common/test_seed.h"

namespace mc::client {
namespace {

TEST_CASE("a pool hands out aligned ranges until it is full") {
  PoolAllocator pool(4 * kPoolAlignBytes);
  auto a = pool.Allocate(1);
  auto b = pool.Allocate(kPoolAlignBytes + 1);
  REQUIRE(a.has_value());
  REQUIRE(b.has_value());
  CHECK(*a % kPoolAlignBytes == 0);
  CHECK(*b % kPoolAlignBytes == 0);
  CHECK(pool.used_bytes() == 3 * kPoolAlignBytes);
  CHECK(pool.Allocate(2 * kPoolAlignBytes) == std::nullopt);
  CHECK(pool.Allocate(kPoolAlignBytes).has_value());
  CHECK(pool.Allocate(1) == std::nullopt);
  CHECK(pool.Allocate(0) == std::nullopt);
}

TEST_CASE("freeing merges neighbours so a whole-pool allocation fits again") {
  PoolAllocator pool(3 * kPoolAlignBytes);
  auto a = *pool.Allocate(kPoolAlignBytes);
  auto b = *pool.Allocate(kPoolAlignBytes);
  auto c = *pool.Allocate(kPoolAlignBytes);
  CHECK(pool.Free(a));
  CHECK(pool.Free(c));
  CHECK(pool.Free(b));
  CHECK_FALSE(pool.Free(b));
  CHECK(pool.used_bytes() == 0);
  CHECK(pool.Allocate(3 * kPoolAlignBytes) == 0u);
}

TEST_CASE("owner finds the allocation that holds a range and nothing past its end") {
  PoolAllocator pool(4 * kPoolAlignBytes);
  auto a = *pool.Allocate(2 * kPoolAlignBytes);
  CHECK(pool.Owner(a + 10, 100) == a);
  CHECK(pool.Owner(a, 2 * kPoolAlignBytes) == a);
  CHECK(pool.Owner(a + 1, 2 * kPoolAlignBytes) == std::nullopt);
  CHECK(pool.Owner(3 * kPoolAlignBytes, 1) == std::nullopt);
}

// Model: a map of live allocations; no two overlap, all inside the pool, and
// used_bytes is their sum.
TEST_CASE("random allocations and frees never overlap and account exactly") {
  std::mt19937_64 rng(TestSeed("pool allocator model"));
  const uint64_t pages = 64;
  PoolAllocator pool(pages * kPoolAlignBytes);
  std::map<uint64_t, uint64_t> live;
  const int cycles = std::getenv("MC_POOL_CYCLES") ? std::atoi(std::getenv("MC_POOL_CYCLES")) : 5000;
  for (int i = 0; i < cycles; ++i) {
    if (live.empty() || rng() % 3 != 0) {
      const uint64_t n = 1 + rng() % (8 * kPoolAlignBytes);
      auto off = pool.Allocate(n);
      if (!off) continue;
      const uint64_t len = (n + kPoolAlignBytes - 1) / kPoolAlignBytes * kPoolAlignBytes;
      REQUIRE(*off + len <= pages * kPoolAlignBytes);
      auto next = live.lower_bound(*off);
      if (next != live.end()) REQUIRE(*off + len <= next->first);
      if (next != live.begin()) REQUIRE(std::prev(next)->first + std::prev(next)->second <= *off);
      live.emplace(*off, len);
    } else {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      REQUIRE(pool.Free(it->first));
      live.erase(it);
    }
    uint64_t sum = 0;
    for (auto& [o, l] : live) sum += l;
    REQUIRE(pool.used_bytes() == sum);
  }
}

}  // namespace
}  // namespace mc::client

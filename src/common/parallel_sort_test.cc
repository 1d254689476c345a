#include "common/parallel_sort.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "common/test_seed.h"

namespace mc {
namespace {

TEST_CASE("a parallel sort orders large arrays as std::sort does, duplicates included") {
  std::mt19937_64 rng(TestSeed("parallel sort"));
  // Distinct values, few distinct values (most equal to any pivot), sorted
  // and reversed input, and a size just under the threshold.
  const size_t big = kParallelSortMinElements + 12345;
  for (uint64_t modulus : {uint64_t{0}, uint64_t{3}, uint64_t{1000}}) {
    std::vector<std::pair<uint64_t, uint64_t>> v(big);
    for (size_t i = 0; i < v.size(); ++i) v[i] = {modulus ? rng() % modulus : rng(), i};
    auto expect = v;
    std::sort(expect.begin(), expect.end());
    ParallelSort(v.begin(), v.end());
    CHECK(v == expect);
  }
  std::vector<uint32_t> up(big), down(big), small(kParallelSortMinElements - 1);
  for (size_t i = 0; i < big; ++i) up[i] = down[big - 1 - i] = static_cast<uint32_t>(i);
  for (auto& x : small) x = static_cast<uint32_t>(rng());
  ParallelSort(up.begin(), up.end());
  ParallelSort(down.begin(), down.end());
  ParallelSort(small.begin(), small.end(), [](uint32_t a, uint32_t b) { return a > b; });
  CHECK(std::is_sorted(up.begin(), up.end()));
  CHECK(down == up);
  CHECK(std::is_sorted(small.begin(), small.end(), [](uint32_t a, uint32_t b) { return a > b; }));
}

}  // namespace
}  // namespace mc

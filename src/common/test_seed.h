// The seed of a randomized test: MC_SEED when set (to replay a failure),
// otherwise a fresh random one. Printed with what it seeds, so every failing
// run can be replayed. For tests only; thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>

namespace mc {

inline uint64_t TestSeed(const char* what) {
  uint64_t seed = 0;
  if (const char* env = std::getenv("MC_SEED")) {
    seed = std::strtoull(env, nullptr, 10);
  } else {
    std::random_device rd;
    seed = uint64_t{rd()} << 32 ^ rd();
  }
  std::printf("%s: seed %llu (replay with MC_SEED=%llu)\n", what,
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  return seed;
}

}  // namespace mc

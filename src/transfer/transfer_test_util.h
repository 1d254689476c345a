// Helpers shared by the transfer unit tests (and those of the rooms above
// it): a seeded RNG (prints its seed, MC_SEED replays) and random bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "common/test_seed.h"

namespace mc::transfer::testing {

// One seed per test binary; each test offsets it.
inline uint64_t TestSeed() {
  static const uint64_t seed = mc::TestSeed("transfer tests");
  return seed;
}

inline std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t len) {
  std::vector<uint8_t> v(len);
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t x = rng();
    std::memcpy(v.data() + i, &x, 8);
  }
  for (; i < len; ++i) v[i] = static_cast<uint8_t>(rng());
  return v;
}

}  // namespace mc::transfer::testing

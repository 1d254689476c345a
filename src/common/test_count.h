// How much a randomized test does: `name` from the environment when set (a
// longer run by hand), otherwise `fallback` (CI's small default). Printed,
// like the seed (test_seed.h). For tests only; thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace mc {

inline uint64_t TestCount(const char* name, uint64_t fallback) {
  const char* env = std::getenv(name);
  const uint64_t n = env != nullptr ? std::strtoull(env, nullptr, 10) : fallback;
  std::printf("%s=%llu\n", name, static_cast<unsigned long long>(n));
  return n;
}

}  // namespace mc

// BackgroundEvictionBytes: how much the master's periodic tick frees when the
// pool is above its high watermark. A pure function of the pool's state,
// header-only so the master's Tick and the trace replay (trace_replay.cc in
// this module, run by benchmarks/trace_sim, which links the policies but not
// the master) run the same rule.
// Thread-safe (no state).
#pragma once

#include <algorithm>
#include <cstdint>

#include "common/defaults.h"

namespace mc::master {

struct PoolLevel {
  uint64_t capacity_bytes = 0;
  uint64_t allocated_bytes = 0;
  double high_watermark_ratio = kDefaultEvictionHighWatermarkRatio;
  double eviction_ratio = kDefaultEvictionRatio;
  // Puts had to evict for themselves since the last tick.
  bool puts_evicted = false;
};

// Bytes to free now: what brings usage back down to the watermark, at most
// eviction_ratio of the capacity in one tick; 0 at or under the watermark,
// and 0 while puts are evicting for themselves.
//
// Why no lower: the put path evicts for itself when the pool is full, so
// background eviction only exists to keep puts from waiting. Freeing below
// the watermark (the reference goes down to watermark - ratio) buys no put
// that the watermark's own headroom does not, and throws away data the pool
// could still serve: the policy then works with ~85% of the capacity.
// Why at most eviction_ratio: when puts outrun the tick (more than the
// headroom arrives between two ticks) they evict for themselves anyway, one
// victim at a time, and a larger background round only evicts early.
// (Measured with trace_sim over the shared trace and synthetic seeds 16-47.)
// Why nothing while puts evict for themselves: then the puts between two
// ticks outrun the headroom, so a round's headroom is gone again within the
// next tick and no put waits less for it; the round only discards objects
// early, at moments set by the timer rather than by the workload (a 2048-
// block trace replay at watermark 0.9 lost up to 0.003 of hit ratio to exact
// LRU on some runs and gained 0.008 on others). Once puts stop evicting for
// a whole tick, the rounds resume and keep the headroom for the next burst.
inline uint64_t BackgroundEvictionBytes(const PoolLevel& pool) {
  const double cap = static_cast<double>(pool.capacity_bytes);
  const double over = static_cast<double>(pool.allocated_bytes) - pool.high_watermark_ratio * cap;
  if (pool.capacity_bytes == 0 || over <= 0 || pool.puts_evicted) return 0;
  return static_cast<uint64_t>(std::min(over, pool.eviction_ratio * cap));
}

}  // namespace mc::master

// Workload traces and the prefix-cache replay that judges eviction policies.
//
// A trace is the reference's JSON-lines format, one request a line:
//   {"timestamp": ms, "input_length": tokens, "output_length": tokens,
//    "hash_ids": [id, ...]}
// where each hash id is one KV block and a request's ids form a prefix chain.
// Replay does what an inference engine does per request: find the longest
// cached prefix (stopping at the first miss; every hit block is an access),
// then store the blocks after it (one still cached is touched, not stored).
// Prefix hit ratio = hit blocks / all blocks of the trace.
//
// Everything here is deterministic and single-threaded; `PrefixCache` is the
// seam a live cluster implements for `mooncake bench --trace`.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "eviction/policy.h"

namespace mc::bench {

// Limits on what a trace may hold, checked while parsing.
inline constexpr size_t kMaxTraceLineBytes = 16 << 20;
inline constexpr size_t kMaxBlocksPerRequest = 1 << 20;

struct TraceRequest {
  uint64_t timestamp_ms = 0;
  uint64_t input_length = 0;
  uint64_t output_length = 0;
  std::vector<uint64_t> hash_ids;
};

struct Trace {
  std::vector<TraceRequest> requests;
  uint64_t total_blocks = 0;
  uint64_t distinct_blocks = 0;
};

// Errors name `source` and the 1-based line: "t.jsonl:7: expected ':' ...".
// Blank lines are skipped.
Result<Trace> ParseTrace(std::string_view text, std::string_view source);
Result<Trace> LoadTrace(const std::string& path);

// What replay drives: a cache of blocks keyed by hash id.
class PrefixCache {
 public:
  virtual ~PrefixCache() = default;
  // Length of the cached prefix of `blocks`; the blocks of that prefix are
  // accessed (the caller stops at the first miss).
  virtual size_t LookupPrefix(std::span<const uint64_t> blocks) = 0;
  // Stores `blocks` (the part of a request after its cached prefix); blocks
  // still cached are touched instead.
  virtual void Store(std::span<const uint64_t> blocks) = 0;
};

struct ReplayStats {
  uint64_t requests = 0;
  uint64_t blocks = 0;
  uint64_t hit_blocks = 0;
  double hit_ratio() const { return blocks ? double(hit_blocks) / double(blocks) : 0.0; }
};

// `before_each` (optional) runs before each request, e.g. to pace a live
// replay at the trace's timestamps.
ReplayStats ReplayTrace(const Trace& trace, PrefixCache& cache,
                        const std::function<void(const TraceRequest&)>& before_each = {});

// In which order a request's blocks are reported to an EvictionPolicy.
enum class TouchOrder {
  kChainOrder,  // head first, as the engine walks the chain: the tail ends most recent
  kHeadLast,    // tail first, so the chain head, which every later request needs, ends most recent
};

// Exact LRU over `capacity_blocks` blocks, touching blocks in chain order
// (the reference behaviour). The yardstick policies are judged against.
std::unique_ptr<PrefixCache> MakeExactLruCache(size_t capacity_blocks);

// How the simulated pool models the master's background eviction: every
// `puts_per_tick` stored blocks a tick runs master::BackgroundEvictionBytes
// with these ratios (the master ticks every 100 ms, so this is the put rate).
// 0 (the default) or a watermark of 1.0 models no background eviction.
struct PoolModel {
  double high_watermark_ratio = 1.0;
  double eviction_ratio = 0.05;
  uint64_t puts_per_tick = 0;
  // A read leases the block: it cannot be evicted for this many puts (the
  // master's read lease in put-rate terms; 0: no leases).
  uint64_t lease_puts = 0;
};

// Drives `policy` through the master's seam with a block counter: a store
// into a full cache first asks NextVictim (everything evictable).
std::unique_ptr<PrefixCache> MakePolicyCache(std::unique_ptr<master::EvictionPolicy> policy,
                                             size_t capacity_blocks, TouchOrder order,
                                             const PoolModel& pool = {});

double ExactLruHitRatio(const Trace& trace, size_t capacity_blocks);
// Belady's MIN over the same replay (belady.cc): the offline optimum, the
// other end of the yardstick.
double BeladyHitRatio(const Trace& trace, size_t capacity_blocks);
// Share of the LRU-to-Belady gap `policy` closes (0 when there is no gap;
// negative when the policy is below LRU).
double GapClosed(double lru, double belady, double policy);
// What replaying a trace through one policy shows: its hit ratio and what
// its victims cost (wall time of NextVictim calls, objects examined).
struct PolicyReplayFigures {
  double hit_ratio = 0;
  uint64_t victims = 0;
  uint64_t victim_steps = 0;  // EvictionStats::victim_steps (0: not counted)
  uint64_t victim_ns = 0;
  double ns_per_eviction() const { return victims ? double(victim_ns) / double(victims) : 0.0; }
  double steps_per_eviction() const {
    return victims ? double(victim_steps) / double(victims) : 0.0;
  }
};

// `policy_name` as MakeEvictionPolicy takes it (sized with capacity_blocks);
// an unknown name is an INVALID_PARAMS error.
Result<PolicyReplayFigures> ReplayPolicy(const Trace& trace, std::string_view policy_name,
                                         size_t capacity_blocks,
                                         TouchOrder order = TouchOrder::kHeadLast,
                                         const PoolModel& pool = {});
// ReplayPolicy's hit ratio alone.
Result<double> PolicyHitRatio(const Trace& trace, std::string_view policy_name,
                              size_t capacity_blocks, TouchOrder order = TouchOrder::kHeadLast,
                              const PoolModel& pool = {});

}  // namespace mc::bench

// Live trace replay for `mooncake bench --trace`: the trace's requests run
// against a Target as an inference engine would (longest cached prefix by
// exists then get, then put of the missing blocks; block keys derived from
// hash ids), optionally paced at the trace's timestamps. Single-threaded:
// request order decides what is cached. Not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "bench/report.h"
#include "bench/workload.h"
#include "eviction/trace.h"

namespace mc::bench {

// Keys of one exists/get/put call of the replay.
inline constexpr size_t kTraceBatchKeys = 256;

struct LiveTraceOptions {
  uint64_t block_size = 64 << 10;
  uint64_t capacity_blocks = 0;  // pool bytes / block size, for the exact-LRU yardstick
  double speedup = 0;            // 0: as fast as possible; X: trace pace times X
  std::string key_prefix;
  std::string file;
};

struct LiveTraceResult {
  TraceSummary summary;
  std::vector<OpResult> ops;  // exists, get, put of the replay
};

Result<LiveTraceResult> ReplayLive(const Trace& trace, const TargetFactory& factory,
                                   const std::string& target_name, const LiveTraceOptions& options);

}  // namespace mc::bench

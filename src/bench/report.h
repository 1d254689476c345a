// Printing what `mooncake bench` measured: the setup block, the results table
// (side by side with the ratio when a comparison target ran) and the JSON
// file of `--json`. Pure formatting; not thread-safe (call from one thread).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/workload.h"

namespace mc::bench {

// One line of the setup: printed "name: text", written to JSON as a string
// or (numeric) as a bare number.
struct SetupField {
  std::string name;
  std::string text;
  bool numeric = false;
};

// One eviction policy replayed offline over the trace at the pool's
// capacity (trace_replay's PolicyCache, the master's tail-first touches).
struct PolicyFigure {
  std::string name;
  double hit_ratio = 0;
  double gap_closed = 0;  // of the exact-LRU-to-Belady gap
  uint64_t victims = 0;
  double ns_per_eviction = 0;  // wall time of NextVictim calls
  double steps_per_eviction = 0;  // objects examined per victim (0: not counted)
};

struct TraceSummary {
  std::string file;
  uint64_t requests = 0;
  uint64_t blocks = 0;
  uint64_t hit_blocks = 0;
  uint64_t stored_blocks = 0;
  uint64_t failed_blocks = 0;
  uint64_t block_size = 0;
  uint64_t capacity_blocks = 0;
  uint64_t bytes_moved = 0;
  double seconds = 0;
  double hit_ratio = 0;
  double lru_hit_ratio = 0;
  double belady_hit_ratio = 0;  // Belady's MIN, the offline optimum
  double gap_closed = 0;        // share of the LRU-to-Belady gap this run closed
  std::vector<PolicyFigure> policies;
};

void PrintSetup(const std::vector<SetupField>& setup);
// Rows in run order; a "redis" row follows the mooncake row of the same op
// and gets the mooncake/redis ratio beside it. `note_misses`: reads were
// meant to find their keys, so a get/exists row that mostly missed gets a note.
void PrintResults(const std::vector<OpResult>& results, bool note_misses);
void PrintTrace(const TraceSummary& trace);

std::string ToJson(const std::vector<SetupField>& setup, const std::vector<OpResult>& results,
                   const std::optional<TraceSummary>& trace);

}  // namespace mc::bench

// libFuzzer target for the JSON-lines trace parser (eviction/trace.cc, read
// by trace_sim and `mooncake bench --trace`). Any input must be parsed or
// refused with an error naming the source and line; an accepted trace must
// be consistent (block counts) and replay through the exact-LRU yardstick
// and each eviction policy with a hit ratio in [0, 1]; so must the admission
// oracles, and the chain figures must add up.
// Run: tests/fuzz/run_fuzz.sh trace_fuzz.
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <unordered_set>

#include "common/log.h"
#include "eviction/oracle.h"
#include "eviction/trace.h"
#include "eviction/trace_stats.h"

using namespace mc;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  SetLogLevel(LogLevel::ERROR);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto trace = bench::ParseTrace(text, "fuzz.jsonl");
  if (!trace.ok()) {
    if (trace.status().message().rfind("fuzz.jsonl:", 0) != 0) std::abort();
    return 0;
  }
  uint64_t total = 0;
  std::unordered_set<uint64_t> distinct;
  for (const auto& r : trace->requests) {
    total += r.hash_ids.size();
    distinct.insert(r.hash_ids.begin(), r.hash_ids.end());
  }
  if (total != trace->total_blocks || distinct.size() != trace->distinct_blocks) std::abort();
  // Capacity from the input's size, so small and large caches are both seen.
  const size_t capacity = 1 + size % 16;
  double lru = bench::ExactLruHitRatio(*trace, capacity);
  if (!(lru >= 0.0 && lru <= 1.0)) std::abort();
  for (const char* policy : {"lru", "adaptive"}) {
    auto ratio = bench::PolicyHitRatio(*trace, policy, capacity);
    if (!ratio.ok() || !(*ratio >= 0.0 && *ratio <= 1.0)) std::abort();
  }
  bench::PoolModel pool{0.5, 0.25, 2, 3};
  auto ratio = bench::PolicyHitRatio(*trace, "adaptive", capacity, bench::TouchOrder::kChainOrder,
                                     pool);
  if (!ratio.ok() || !(*ratio >= 0.0 && *ratio <= 1.0)) std::abort();
  for (double oracle : {bench::DeadBlockBypassLruHitRatio(*trace, capacity),
                        bench::OneShotChainBypassLruHitRatio(*trace, capacity)}) {
    if (!(oracle >= 0.0 && oracle <= 1.0)) std::abort();
  }
  const bench::ChainFigures chains = bench::SummarizeChains(*trace);
  uint64_t turn_requests = 0, chained = 0;
  for (const auto& t : chains.turns) turn_requests += t.requests;
  for (const auto& r : trace->requests) chained += !r.hash_ids.empty();
  if (chains.new_blocks != trace->distinct_blocks || chains.one_shot_chains > chains.chains ||
      turn_requests != chained)
    std::abort();
  return 0;
}

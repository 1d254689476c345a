// trace_sim: replays a trace against exact LRU and the eviction policies and
// prints prefix hit ratios per cache capacity.
//
//   trace_sim FILE [capacity_blocks...]          (default 2048 4096 8192 16384)
//   trace_sim --synthetic SEED [capacity_blocks...]   (variant SEED % 4)
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/trace.h"
#include "bench/trace_synth.h"

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: trace_sim FILE [capacity_blocks...]\n"
               "       trace_sim --synthetic SEED [capacity_blocks...]\n");
  return 2;
}

bool ParseCount(const char* text, uint64_t* out) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0') return false;
  *out = v;
  return true;
}

double Must(const mc::Result<double>& r) {
  if (!r.ok()) {
    std::fprintf(stderr, "trace_sim: %s\n", r.status().ToString().c_str());
    std::exit(1);
  }
  return *r;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mc::bench;
  if (argc < 2) return Usage();
  int arg = 1;
  mc::Result<Trace> trace = mc::Error(mc::ErrorCode::INVALID_PARAMS, "no trace");
  std::string source;
  if (std::string(argv[1]) == "--synthetic") {
    uint64_t seed = 0;
    if (argc < 3 || !ParseCount(argv[2], &seed)) return Usage();
    trace = GenerateSyntheticTrace(SyntheticVariant(uint32_t(seed % kSyntheticVariants)), seed);
    source = "synthetic seed " + std::to_string(seed) + " variant " +
             std::to_string(seed % kSyntheticVariants);
    arg = 3;
  } else {
    source = argv[1];
    trace = LoadTrace(source);
    arg = 2;
  }
  if (!trace.ok()) {
    std::fprintf(stderr, "trace_sim: %s\n", trace.status().ToString().c_str());
    return 1;
  }
  std::vector<uint64_t> capacities;
  for (; arg < argc; ++arg) {
    uint64_t c = 0;
    if (!ParseCount(argv[arg], &c) || c == 0) return Usage();
    capacities.push_back(c);
  }
  if (capacities.empty()) capacities = {2048, 4096, 8192, 16384};

  std::printf("trace: %s\nrequests: %zu  blocks: %llu  distinct blocks: %llu\n",
              source.c_str(), trace->requests.size(),
              (unsigned long long)trace->total_blocks,
              (unsigned long long)trace->distinct_blocks);
  std::printf("policies see tail-first touches (head last) unless marked chain-order\n\n");
  std::printf("%10s %10s %10s %10s %18s %10s %10s\n", "capacity", "exact_lru", "lru",
              "adaptive", "adaptive(chain)", "requests", "blocks");
  for (uint64_t c : capacities) {
    double exact = ExactLruHitRatio(*trace, c);
    double lru = Must(PolicyHitRatio(*trace, "lru", c));
    double adaptive = Must(PolicyHitRatio(*trace, "adaptive", c));
    double adaptive_chain = Must(PolicyHitRatio(*trace, "adaptive", c, TouchOrder::kChainOrder));
    std::printf("%10llu %10.4f %10.4f %10.4f %18.4f %10zu %10llu\n", (unsigned long long)c,
                exact, lru, adaptive, adaptive_chain, trace->requests.size(),
                (unsigned long long)trace->total_blocks);
  }
  return 0;
}

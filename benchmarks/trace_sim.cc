// trace_sim: replays a trace against exact LRU and the eviction policies and
// prints prefix hit ratios per cache capacity.
//
//   trace_sim [POOL] FILE [capacity_blocks...]       (default 2048 4096 8192 16384)
//   trace_sim [POOL] --synthetic SEED [capacity_blocks...]   (variant SEED % 4)
//   trace_sim [POOL] --seeds FIRST-LAST [capacity_blocks...]
//
// --seeds replays the synthetic traces of those seeds and prints, per
// capacity, the adaptive policy's mean and worst gain over exact LRU.
// POOL models the master's background eviction (see PoolModel):
//   --watermark RATIO (default 1.0: none)  --eviction-ratio RATIO (0.05)
//   --puts-per-tick N (default 1000; the master ticks every 100 ms)
//   --lease-puts N (default 0: a read leases a block against eviction for N puts)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "eviction/oracle.h"
#include "eviction/trace.h"
#include "eviction/trace_stats.h"
#include "eviction/trace_synth.h"

namespace {

using namespace mc::bench;

int Usage() {
  std::fprintf(stderr,
               "usage: trace_sim [POOL] FILE [capacity_blocks...]\n"
               "       trace_sim [POOL] --synthetic SEED [capacity_blocks...]\n"
               "       trace_sim [POOL] --seeds FIRST-LAST [capacity_blocks...]\n"
               "POOL:  --watermark RATIO  --eviction-ratio RATIO  --puts-per-tick N  --lease-puts N\n");
  return 2;
}

bool ParseCount(const char* text, uint64_t* out) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0') return false;
  *out = v;
  return true;
}

bool ParseRatio(const char* text, double* out) {
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v >= 0 && v <= 1)) return false;
  *out = v;
  return true;
}

template <typename T>
T Must(const mc::Result<T>& r) {
  if (!r.ok()) {
    std::fprintf(stderr, "trace_sim: %s\n", r.status().ToString().c_str());
    std::exit(1);
  }
  return *r;
}

Trace Synthetic(uint64_t seed) {
  return GenerateSyntheticTrace(SyntheticVariant(uint32_t(seed % kSyntheticVariants)), seed);
}

void PrintPool(const PoolModel& pool) {
  if (pool.high_watermark_ratio >= 1.0 || pool.puts_per_tick == 0) {
    std::printf("pool: no background eviction (watermark 1.0)\n");
  } else {
    std::printf("pool: high watermark %.2f, eviction ratio %.2f, a tick every %llu puts\n",
                pool.high_watermark_ratio, pool.eviction_ratio,
                (unsigned long long)pool.puts_per_tick);
  }
  if (pool.lease_puts > 0)
    std::printf("pool: a read leases a block for %llu puts\n", (unsigned long long)pool.lease_puts);
}

// What each policy's victims cost: wall time of NextVictim (noisy on a
// shared machine: print the load beside it) and objects it examined.
void PrintCosts(const std::vector<uint64_t>& capacities,
                const std::vector<std::vector<PolicyReplayFigures>>& costs) {
  double load[3] = {0, 0, 0};
  const bool has_load = getloadavg(load, 3) == 3;
  std::printf("\ncost per eviction: ns (objects examined; - not counted)%s", has_load ? "" : "\n");
  if (has_load) std::printf(", load average %.2f %.2f %.2f\n", load[0], load[1], load[2]);
  std::printf("%10s", "capacity");
  for (std::string_view name : mc::master::kEvictionPolicyNames)
    std::printf(" %17.*s", int(name.size()), name.data());
  std::printf("\n");
  for (size_t i = 0; i < capacities.size(); ++i) {
    std::printf("%10llu", (unsigned long long)capacities[i]);
    for (const PolicyReplayFigures& f : costs[i]) {
      char steps[16] = "-";
      if (f.victim_steps > 0) std::snprintf(steps, sizeof steps, "%.2f", f.steps_per_eviction());
      std::printf(" %9.0f (%5s)", f.ns_per_eviction(), steps);
    }
    std::printf("\n");
  }
}

// Each policy the master can run against both ends of the yardstick, and
// how far perfect admission alone would take LRU (oracle.h).
void PrintYardsticks(const Trace& trace, const PoolModel& pool,
                     const std::vector<uint64_t>& capacities) {
  std::printf("\ngap closed = (policy - exact_lru) / (belady - exact_lru)\n");
  std::printf("%10s %10s %10s", "capacity", "exact_lru", "belady");
  for (std::string_view name : mc::master::kEvictionPolicyNames)
    std::printf(" %17.*s", int(name.size()), name.data());
  std::printf(" %17s %17s\n", "oracle:no-dead", "oracle:no-1shot");
  std::vector<std::vector<PolicyReplayFigures>> costs;  // by capacity, by policy
  for (uint64_t c : capacities) {
    const double lru = ExactLruHitRatio(trace, c), belady = BeladyHitRatio(trace, c);
    std::printf("%10llu %10.4f %10.4f", (unsigned long long)c, lru, belady);
    auto cell = [&](double h) { std::printf(" %8.4f (%5.1f%%)", h, 100 * GapClosed(lru, belady, h)); };
    costs.emplace_back();
    for (std::string_view name : mc::master::kEvictionPolicyNames) {
      costs.back().push_back(Must(ReplayPolicy(trace, name, c, TouchOrder::kHeadLast, pool)));
      cell(costs.back().back().hit_ratio);
    }
    cell(DeadBlockBypassLruHitRatio(trace, c));
    cell(OneShotChainBypassLruHitRatio(trace, c));
    std::printf("\n");
  }
  PrintCosts(capacities, costs);
}

// The chain structure behind the figures (trace_stats.h).
void PrintChains(const Trace& trace) {
  const ChainFigures f = SummarizeChains(trace);
  std::printf("\nchains (requests by first block): %llu, %llu never continued (%llu blocks of %llu "
              "distinct)\n",
              (unsigned long long)f.chains, (unsigned long long)f.one_shot_chains,
              (unsigned long long)f.one_shot_blocks, (unsigned long long)f.new_blocks);
  std::printf("%6s %10s %10s %22s\n", "turn", "requests", "continued", "median gap (new blocks)");
  for (size_t k = 0; k < f.turns.size(); ++k) {
    const TurnFigures& t = f.turns[k];
    if (t.requests == 0) continue;
    std::printf("%5zu%s %10llu %9.0f%% %22llu\n", k + 1, k + 1 == f.turns.size() ? "+" : " ",
                (unsigned long long)t.requests, 100.0 * double(t.continued) / double(t.requests),
                (unsigned long long)t.median_gap_new_blocks);
  }
}

int RunOne(const Trace& trace, const std::string& source, const PoolModel& pool,
           const std::vector<uint64_t>& capacities) {
  std::printf("trace: %s\nrequests: %zu  blocks: %llu  distinct blocks: %llu\n", source.c_str(),
              trace.requests.size(), (unsigned long long)trace.total_blocks,
              (unsigned long long)trace.distinct_blocks);
  PrintPool(pool);
  std::printf("policies see tail-first touches (head last) unless marked chain-order\n\n");
  std::printf("%10s %10s %10s %10s %18s %10s %10s\n", "capacity", "exact_lru", "lru",
              "adaptive", "adaptive(chain)", "requests", "blocks");
  for (uint64_t c : capacities) {
    double exact = ExactLruHitRatio(trace, c);
    double lru = Must(PolicyHitRatio(trace, "lru", c, TouchOrder::kHeadLast, pool));
    double adaptive = Must(PolicyHitRatio(trace, "adaptive", c, TouchOrder::kHeadLast, pool));
    double adaptive_chain =
        Must(PolicyHitRatio(trace, "adaptive", c, TouchOrder::kChainOrder, pool));
    std::printf("%10llu %10.4f %10.4f %10.4f %18.4f %10zu %10llu\n", (unsigned long long)c,
                exact, lru, adaptive, adaptive_chain, trace.requests.size(),
                (unsigned long long)trace.total_blocks);
  }
  PrintYardsticks(trace, pool, capacities);
  PrintChains(trace);
  return 0;
}

int RunSeeds(uint64_t first, uint64_t last, const PoolModel& pool,
             const std::vector<uint64_t>& capacities) {
  std::printf("synthetic seeds %llu-%llu (variant = seed %% %u)\n", (unsigned long long)first,
              (unsigned long long)last, kSyntheticVariants);
  PrintPool(pool);
  std::printf("adaptive minus exact LRU, per capacity\n\n");
  std::printf("%10s %10s %10s %10s %10s\n", "capacity", "mean_gain", "worst_gain", "worst_seed",
              "below_lru");
  std::vector<Trace> traces;
  for (uint64_t s = first; s <= last; ++s) traces.push_back(Synthetic(s));
  for (uint64_t c : capacities) {
    double sum = 0, worst = 1;
    uint64_t worst_seed = first, below = 0;
    for (uint64_t s = first; s <= last; ++s) {
      const Trace& t = traces[s - first];
      double gain = Must(PolicyHitRatio(t, "adaptive", c, TouchOrder::kHeadLast, pool)) -
                    ExactLruHitRatio(t, c);
      sum += gain;
      if (gain < worst) worst = gain, worst_seed = s;
      below += gain < 0;
    }
    std::printf("%10llu %+10.4f %+10.4f %10llu %10llu\n", (unsigned long long)c,
                sum / double(last - first + 1), worst, (unsigned long long)worst_seed,
                (unsigned long long)below);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  PoolModel pool;
  pool.puts_per_tick = 1000;
  int arg = 1;
  for (; arg + 1 < argc && std::string(argv[arg]).starts_with("--"); arg += 2) {
    std::string flag = argv[arg];
    bool ok = flag == "--watermark"        ? ParseRatio(argv[arg + 1], &pool.high_watermark_ratio)
              : flag == "--eviction-ratio" ? ParseRatio(argv[arg + 1], &pool.eviction_ratio)
              : flag == "--puts-per-tick"  ? ParseCount(argv[arg + 1], &pool.puts_per_tick)
              : flag == "--lease-puts"     ? ParseCount(argv[arg + 1], &pool.lease_puts)
                                           : (flag == "--synthetic" || flag == "--seeds");
    if (!ok) return Usage();
    if (flag == "--synthetic" || flag == "--seeds") break;
  }
  if (arg >= argc) return Usage();
  std::string mode = argv[arg];
  uint64_t first = 0, last = 0;
  mc::Result<Trace> trace = mc::Error(mc::ErrorCode::INVALID_PARAMS, "no trace");
  std::string source;
  if (mode == "--synthetic" || mode == "--seeds") {
    if (arg + 1 >= argc) return Usage();
    std::string spec = argv[arg + 1];
    size_t dash = spec.find('-');
    if (!ParseCount(spec.substr(0, dash).c_str(), &first)) return Usage();
    last = first;
    if (mode == "--seeds" &&
        (dash == std::string::npos || !ParseCount(spec.substr(dash + 1).c_str(), &last) ||
         last < first))
      return Usage();
    if (mode == "--synthetic") {
      trace = Synthetic(first);
      source = "synthetic seed " + std::to_string(first) + " variant " +
               std::to_string(first % kSyntheticVariants);
    }
    arg += 2;
  } else {
    source = mode;
    trace = LoadTrace(source);
    arg += 1;
  }
  std::vector<uint64_t> capacities;
  for (; arg < argc; ++arg) {
    uint64_t c = 0;
    if (!ParseCount(argv[arg], &c) || c == 0) return Usage();
    capacities.push_back(c);
  }
  if (capacities.empty()) capacities = {2048, 4096, 8192, 16384};
  if (mode == "--seeds") return RunSeeds(first, last, pool, capacities);
  if (!trace.ok()) {
    std::fprintf(stderr, "trace_sim: %s\n", trace.status().ToString().c_str());
    return 1;
  }
  return RunOne(*trace, source, pool, capacities);
}

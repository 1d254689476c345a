#include "bench/report.h"

#include <cstdio>

#include "common/json_escape.h"

namespace mc::bench {

namespace {

constexpr double kQuantiles[] = {0.50, 0.90, 0.99, 0.999};
constexpr const char* kQuantileNames[] = {"p50", "p90", "p99", "p999"};
// Below this share of keys found, a get or exists row gets a note.
constexpr double kLowHitPercent = 90.0;

double Us(uint64_t ns) { return double(ns) / 1000.0; }

// Keys stored (put) or found (get, exists) per second: what a comparison is
// judged on, so a miss served fast cannot pass for speed.
double HitsPerS(const OpResult& r) { return r.seconds > 0 ? double(r.hits) / r.seconds : 0; }

double Ratio(const OpResult& ours, const OpResult& theirs) {
  return HitsPerS(theirs) > 0 ? HitsPerS(ours) / HitsPerS(theirs) : 0;
}

double HitPercent(const OpResult& r) { return r.ops ? 100.0 * double(r.hits) / double(r.ops) : 0; }

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string Quoted(const std::string& s) { return "\"" + JsonEscape(s) + "\""; }

const OpResult* Partner(const std::vector<OpResult>& results, size_t i) {
  if (results[i].target != "redis") return nullptr;
  for (size_t j = i; j-- > 0;) {
    if (results[j].target != "redis" && results[j].op == results[i].op) return &results[j];
  }
  return nullptr;
}

}  // namespace

void PrintSetup(const std::vector<SetupField>& setup) {
  for (const SetupField& f : setup) std::printf("%-16s %s\n", (f.name + ":").c_str(), f.text.c_str());
  std::printf("\n");
  std::fflush(stdout);
}

void PrintResults(const std::vector<OpResult>& results, bool note_misses) {
  std::printf("%-9s %-6s %11s %12s %9s %10s %10s %10s %10s %6s %8s %9s\n", "target", "op", "ops",
              "ops/s", "GB/s", "p50 us", "p90 us", "p99 us", "p999 us", "hit%", "errors", "ratio");
  for (size_t i = 0; i < results.size(); ++i) {
    const OpResult& r = results[i];
    std::printf("%-9s %-6s %11llu %12.0f %9.3f", r.target.c_str(), OpName(r.op),
                static_cast<unsigned long long>(r.ops), r.ops_per_s(), r.bytes_per_s() / 1e9);
    for (double q : kQuantiles) std::printf(" %10.1f", Us(r.latency.Percentile(q)));
    std::printf(" %6.1f %8llu", HitPercent(r), static_cast<unsigned long long>(r.errors));
    // The ratio says how many times more keys mooncake stored or found per second than redis.
    const OpResult* m = Partner(results, i);
    if (m != nullptr) std::printf(" %8.2fx", Ratio(*m, r));
    std::printf("\n");
  }
  for (const OpResult& r : results) {
    // A get that mostly misses measures the miss path; say so beside the figure.
    if (note_misses && (r.op == Op::kGet || r.op == Op::kExists) && r.ops > 0 &&
        HitPercent(r) < kLowHitPercent) {
      std::printf("note: only %.1f%% of %s %s found their key: the pool evicted keys this run wrote "
                  "(eviction policy, or other data in the pool); the figure is mostly of misses\n",
                  HitPercent(r), r.target.c_str(), OpName(r.op));
    }
    if (!r.first_error.empty()) {
      std::printf("first %s %s error: %s\n", r.target.c_str(), OpName(r.op), r.first_error.c_str());
    }
  }
  std::printf("(ops count keys, a batch of N being N ops; latency is per call, i.e. per batch;\n"
              " hit%%: keys stored or found; ratio: mooncake/redis in keys stored or found per second)\n");
}

void PrintTrace(const TraceSummary& t) {
  std::printf("\ntrace %s: %llu requests, %llu blocks of %llu bytes, pool %llu blocks\n",
              t.file.c_str(), static_cast<unsigned long long>(t.requests),
              static_cast<unsigned long long>(t.blocks), static_cast<unsigned long long>(t.block_size),
              static_cast<unsigned long long>(t.capacity_blocks));
  std::printf("prefix hit ratio %.4f (exact LRU of the same capacity: %.4f, Belady: %.4f; "
              "this run closes %.1f%% of the gap)\n",
              t.hit_ratio, t.lru_hit_ratio, t.belady_hit_ratio, 100 * t.gap_closed);
  std::printf("stored %llu blocks, %llu failed; %.3f GB moved in %.2f s (%.0f requests/s)\n",
              static_cast<unsigned long long>(t.stored_blocks),
              static_cast<unsigned long long>(t.failed_blocks), double(t.bytes_moved) / 1e9, t.seconds,
              t.seconds > 0 ? double(t.requests) / t.seconds : 0.0);
  if (t.policies.empty()) return;
  std::printf("\npolicies replayed offline at %llu blocks (exact LRU %.4f, Belady %.4f):\n",
              static_cast<unsigned long long>(t.capacity_blocks), t.lru_hit_ratio,
              t.belady_hit_ratio);
  std::printf("%-10s %10s %11s %10s %12s %15s\n", "policy", "hit ratio", "gap closed", "victims",
              "ns/eviction", "steps/eviction");
  for (const PolicyFigure& p : t.policies) {
    char steps[32] = "-";  // not counted by this policy
    if (p.steps_per_eviction > 0) std::snprintf(steps, sizeof steps, "%.2f", p.steps_per_eviction);
    std::printf("%-10s %10.4f %10.1f%% %10llu %12.0f %15s\n", p.name.c_str(), p.hit_ratio,
                100 * p.gap_closed, static_cast<unsigned long long>(p.victims), p.ns_per_eviction,
                steps);
  }
}

std::string ToJson(const std::vector<SetupField>& setup, const std::vector<OpResult>& results,
                   const std::optional<TraceSummary>& trace) {
  std::string j = "{\n  \"setup\": {";
  for (size_t i = 0; i < setup.size(); ++i) {
    j += (i ? ", " : "") + Quoted(setup[i].name) + ": " +
         (setup[i].numeric ? setup[i].text : Quoted(setup[i].text));
  }
  j += "},\n  \"results\": [";
  for (size_t i = 0; i < results.size(); ++i) {
    const OpResult& r = results[i];
    j += std::string(i ? "," : "") + "\n    {\"target\": " + Quoted(r.target) +
         ", \"op\": " + Quoted(OpName(r.op)) + ", \"value_size\": " + std::to_string(r.value_size) +
         ", \"ops\": " + std::to_string(r.ops) + ", \"hits\": " + std::to_string(r.hits) +
         ", \"errors\": " + std::to_string(r.errors) + ", \"batches\": " + std::to_string(r.batches) +
         ", \"seconds\": " + Num(r.seconds) + ", \"ops_per_s\": " + Num(r.ops_per_s()) +
         ", \"bytes_per_s\": " + Num(r.bytes_per_s()) + ", \"latency_us\": {";
    for (size_t q = 0; q < 4; ++q) {
      j += std::string(q ? ", " : "") + "\"" + kQuantileNames[q] +
           "\": " + Num(Us(r.latency.Percentile(kQuantiles[q])));
    }
    j += "}";
    if (const OpResult* m = Partner(results, i); m != nullptr) {
      j += ", \"mooncake_ratio\": " + Num(Ratio(*m, r));
    }
    if (!r.first_error.empty()) j += ", \"first_error\": " + Quoted(r.first_error);
    j += "}";
  }
  j += "\n  ]";
  if (trace) {
    const TraceSummary& t = *trace;
    j += ",\n  \"trace\": {\"file\": " + Quoted(t.file) + ", \"hit_ratio\": " + Num(t.hit_ratio) +
         ", \"lru_hit_ratio\": " + Num(t.lru_hit_ratio) +
         ", \"belady_hit_ratio\": " + Num(t.belady_hit_ratio) + ", \"gap_closed\": " + Num(t.gap_closed) +
         ", \"requests\": " + std::to_string(t.requests) +
         ", \"blocks\": " + std::to_string(t.blocks) + ", \"hit_blocks\": " + std::to_string(t.hit_blocks) +
         ", \"stored_blocks\": " + std::to_string(t.stored_blocks) +
         ", \"failed_blocks\": " + std::to_string(t.failed_blocks) +
         ", \"block_size\": " + std::to_string(t.block_size) +
         ", \"capacity_blocks\": " + std::to_string(t.capacity_blocks) +
         ", \"bytes_moved\": " + std::to_string(t.bytes_moved) + ", \"seconds\": " + Num(t.seconds) +
         ", \"requests_per_s\": " + Num(t.seconds > 0 ? double(t.requests) / t.seconds : 0.0) +
         ", \"policies\": [";
    for (size_t i = 0; i < t.policies.size(); ++i) {
      const PolicyFigure& p = t.policies[i];
      j += std::string(i ? ", " : "") + "{\"name\": " + Quoted(p.name) + ", \"hit_ratio\": " +
           Num(p.hit_ratio) + ", \"gap_closed\": " + Num(p.gap_closed) +
           ", \"victims\": " + std::to_string(p.victims) +
           ", \"ns_per_eviction\": " + Num(p.ns_per_eviction) +
           ", \"steps_per_eviction\": " + Num(p.steps_per_eviction) + "}";
    }
    j += "]}";
  }
  j += "\n}\n";
  return j;
}

}  // namespace mc::bench

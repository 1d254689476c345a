// The bench's workload runner: N worker threads, each with its own Target
// (its own connection), issuing batches of put/get/exists/mixed over a
// shared key space for a duration or a number of ops, recording per-batch
// latency. Run() is called from one thread; it owns the workers it starts.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/histogram.h"
#include "bench/target.h"

namespace mc::bench {

enum class Op { kPut, kGet, kMixed, kExists };
const char* OpName(Op op);

// Monotonic nanoseconds: bench timings measure real time, never injected.
uint64_t SteadyNowNs();
Result<std::vector<Op>> ParseOps(std::string_view list);  // "put,get"

// Limits checked when the command line is read.
inline constexpr uint32_t kMaxThreads = 256;
inline constexpr uint32_t kMaxBatch = 4096;
inline constexpr uint64_t kMaxKeys = 1ull << 24;  // also bounds the zipf table

struct WorkloadOptions {
  uint64_t value_size = 4096;
  uint32_t threads = 1;
  uint32_t batch = 1;
  uint64_t duration_us = 10000000;
  uint64_t ops = 0;  // keys to operate on in all; 0: run for duration_us
  uint64_t keys = 1000;
  bool zipf = false;
  bool progress = false;  // a live "\r" line on stdout
};

// Key names and which of them reads pick from. Put appends fresh indexes;
// on a target that overwrites (Redis) names wrap at `keys`, so its memory
// stays bounded the way eviction bounds mooncake's pool.
class KeySpace {
 public:
  // `hashed`: the name's number is a bijective mix of the index (16 hex
  // digits), so successive keys scatter as hash-named keys of an engine do;
  // otherwise it is the index in decimal. `name_bytes`: the number is
  // zero-padded so every name is at least that long (0: no padding), to
  // measure the master with keys as long as an engine's.
  KeySpace(std::string prefix, uint64_t keys, bool wraps, bool hashed = false,
           uint32_t name_bytes = 0)
      : prefix_(std::move(prefix)), keys_(keys), wraps_(wraps), hashed_(hashed),
        name_bytes_(name_bytes) {}
  void Name(uint64_t index, std::string* out) const;
  uint64_t ClaimPuts(uint64_t n) { return next_put_.fetch_add(n); }
  // Reads pick from the last `keys` indexes put before the phase began.
  void FreezeReadWindow();
  uint64_t read_lo() const { return read_lo_; }
  uint64_t read_hi() const { return read_hi_; }
  uint64_t put_count() const { return next_put_.load(); }

 private:
  std::string prefix_;
  uint64_t keys_;
  bool wraps_;
  bool hashed_;
  uint32_t name_bytes_;
  std::atomic<uint64_t> next_put_{0};
  uint64_t read_lo_ = 0, read_hi_ = 0;
};

struct OpResult {
  std::string target;  // "mooncake" or "redis" (or "blackhole")
  Op op = Op::kPut;
  uint64_t value_size = 0;
  uint64_t ops = 0;  // keys completed (found or not); failed ones are in `errors`
  uint64_t hits = 0;  // of ops: found (get/exists) or stored (put)
  uint64_t errors = 0;
  uint64_t batches = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  LatencyHistogram latency;  // per batch call
  std::string first_error;
  double ops_per_s() const { return seconds > 0 ? double(ops) / seconds : 0; }
  double bytes_per_s() const { return seconds > 0 ? double(bytes) / seconds : 0; }
};

// Runs one op. Connection errors of a worker end the run with that error.
Result<OpResult> RunWorkload(const TargetFactory& factory, const std::string& target_name,
                             Op op, const WorkloadOptions& options, KeySpace& keys);

}  // namespace mc::bench

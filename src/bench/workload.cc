#include "bench/workload.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <thread>

#include "eviction/table.h"

namespace mc::bench {

namespace {

// Zipf(s = 0.99) ranks over the read window: rank 0 is the hottest key.
class ZipfTable {
 public:
  ZipfTable(uint64_t n, double s) : cdf_(n) {
    double sum = 0;
    for (uint64_t i = 0; i < n; ++i) cdf_[i] = (sum += 1.0 / std::pow(double(i + 1), s));
    for (double& c : cdf_) c /= sum;
  }
  uint64_t Sample(double u) const {
    auto it = std::lower_bound(cdf_.begin(), cdf_.end(), u);
    return std::min<uint64_t>(it - cdf_.begin(), cdf_.size() - 1);
  }

 private:
  std::vector<double> cdf_;
};

// State shared by the workers of one run.
struct Shared {
  const WorkloadOptions* options;
  Op op;
  KeySpace* keys;
  const ZipfTable* zipf;
  std::atomic<uint64_t> issued{0};     // keys claimed (ops mode)
  std::atomic<uint64_t> completed{0};  // keys done, for the progress line
  std::atomic<bool> stop{false};
  uint64_t deadline_ns = 0;
};

struct Worker {
  std::unique_ptr<Target> target;
  OpResult result;
  std::mt19937_64 rng;
  std::vector<std::string> names;
  std::vector<uint8_t> value;
};

// How many keys the next batch may take; 0 when the run is over.
uint64_t Claim(Shared& s) {
  if (s.stop.load(std::memory_order_relaxed)) return 0;
  uint64_t batch = s.options->batch;
  if (s.options->ops == 0) return SteadyNowNs() < s.deadline_ns ? batch : 0;
  uint64_t first = s.issued.fetch_add(batch);
  if (first >= s.options->ops) return 0;
  return std::min(batch, s.options->ops - first);
}

void PickReads(Shared& s, Worker& w, uint64_t n) {
  uint64_t lo = s.keys->read_lo(), span = s.keys->read_hi() - lo;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t r = span == 0 ? 0 : s.zipf ? s.zipf->Sample(unit(w.rng)) : w.rng() % span;
    s.keys->Name(lo + r, &w.names[i]);
  }
}

void RunWorker(Shared& s, Worker& w) {
  uint64_t n;
  uint64_t round = 0;
  while ((n = Claim(s)) > 0) {
    Op op = s.op;
    if (op == Op::kMixed) op = (round++ % 2 == 0) ? Op::kGet : Op::kPut;
    if (op == Op::kPut) {
      uint64_t first = s.keys->ClaimPuts(n);
      for (uint64_t i = 0; i < n; ++i) s.keys->Name(first + i, &w.names[i]);
    } else {
      PickReads(s, w, n);
    }
    std::span<const std::string> names(w.names.data(), n);
    uint64_t t0 = SteadyNowNs();
    BatchOutcome out = op == Op::kPut   ? w.target->Put(names, w.value)
                       : op == Op::kGet ? w.target->Get(names, s.options->value_size)
                                        : w.target->Exists(names);
    w.result.latency.Record(SteadyNowNs() - t0);
    w.result.ops += out.ok + out.missing;
    w.result.hits += out.ok;
    w.result.errors += out.failed;
    w.result.bytes += out.bytes;
    ++w.result.batches;
    if (!out.first_error.ok() && w.result.first_error.empty()) {
      w.result.first_error = out.first_error.ToString();
    }
    s.completed.fetch_add(n, std::memory_order_relaxed);
  }
}

// Ops and ops/s only: bytes are known at the end (a miss or a blackhole
// moves none), so the live line does not guess them.
void PrintProgress(const char* target, Op op, uint64_t done, double seconds) {
  double rate = seconds > 0 ? double(done) / seconds : 0;
  std::printf("\r  %-9s %-6s %12llu ops %12.0f ops/s   ", target, OpName(op),
              static_cast<unsigned long long>(done), rate);
  std::fflush(stdout);
}

}  // namespace

uint64_t SteadyNowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

const char* OpName(Op op) {
  switch (op) {
    case Op::kPut: return "put";
    case Op::kGet: return "get";
    case Op::kMixed: return "mixed";
    case Op::kExists: return "exists";
  }
  return "?";
}

Result<std::vector<Op>> ParseOps(std::string_view list) {
  std::vector<Op> ops;
  while (true) {
    size_t comma = list.find(',');
    std::string_view one = list.substr(0, comma);
    if (one == "put") ops.push_back(Op::kPut);
    else if (one == "get") ops.push_back(Op::kGet);
    else if (one == "mixed") ops.push_back(Op::kMixed);
    else if (one == "exists") ops.push_back(Op::kExists);
    else return Error(ErrorCode::INVALID_PARAMS, "--op: unknown operation '" + std::string(one) +
                                                     "' (use put, get, mixed or exists)");
    if (comma == std::string_view::npos) return ops;
    list.remove_prefix(comma + 1);
  }
}

void KeySpace::Name(uint64_t index, std::string* out) const {
  out->assign(prefix_);
  char digits[24];
  uint64_t v = wraps_ ? index % keys_ : index;
  if (hashed_) v = master::eviction::MixBits(v);  // invertible: names stay distinct
  int n = std::snprintf(digits, sizeof digits, hashed_ ? "%016llx" : "%llu",
                        static_cast<unsigned long long>(v));
  const size_t want = out->size() + static_cast<size_t>(n);
  if (name_bytes_ > want) out->append(name_bytes_ - want, '0');  // still distinct
  out->append(digits, static_cast<size_t>(n));
}

void KeySpace::FreezeReadWindow() {
  read_hi_ = next_put_.load();
  read_lo_ = read_hi_ > keys_ ? read_hi_ - keys_ : 0;
}

Result<OpResult> RunWorkload(const TargetFactory& factory, const std::string& target_name,
                             Op op, const WorkloadOptions& options, KeySpace& keys) {
  keys.FreezeReadWindow();
  std::unique_ptr<ZipfTable> zipf;
  uint64_t window = keys.read_hi() - keys.read_lo();
  if (options.zipf && window > 0 && op != Op::kPut) zipf = std::make_unique<ZipfTable>(window, 0.99);
  Shared s;
  s.options = &options;
  s.op = op;
  s.keys = &keys;
  s.zipf = zipf.get();

  // Connect every worker before the clock starts.
  std::vector<Worker> workers(options.threads);
  std::random_device rd;
  for (Worker& w : workers) {
    MC_ASSIGN_OR_RETURN(w.target, factory());
    w.rng.seed((uint64_t(rd()) << 32) | rd());
    w.names.resize(options.batch);
    w.value.resize(options.value_size);
    for (size_t i = 0; i < w.value.size(); ++i) w.value[i] = static_cast<uint8_t>(i * 131 + 7);
  }
  uint64_t start = SteadyNowNs();
  s.deadline_ns = start + options.duration_us * 1000;
  std::vector<std::thread> threads;
  for (Worker& w : workers) threads.emplace_back([&s, &w] { RunWorker(s, w); });

  bool live = options.progress && ::isatty(STDOUT_FILENO);
  if (live) {
    // Wake often enough for a short run to end promptly; print twice a second.
    uint64_t last_print = start;
    while (s.completed.load() < (options.ops ? options.ops : UINT64_MAX) && SteadyNowNs() < s.deadline_ns) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (SteadyNowNs() - last_print >= 500000000) {
        last_print = SteadyNowNs();
        PrintProgress(target_name.c_str(), op, s.completed.load(), double(last_print - start) / 1e9);
      }
    }
  }
  for (std::thread& t : threads) t.join();
  uint64_t elapsed = SteadyNowNs() - start;
  if (live) std::printf("\r%100s\r", "");

  OpResult total;
  total.target = target_name;
  total.op = op;
  total.value_size = options.value_size;
  total.seconds = double(elapsed) / 1e9;
  for (Worker& w : workers) {
    total.ops += w.result.ops;
    total.hits += w.result.hits;
    total.errors += w.result.errors;
    total.bytes += w.result.bytes;
    total.batches += w.result.batches;
    total.latency.Merge(w.result.latency);
    if (total.first_error.empty()) total.first_error = w.result.first_error;
  }
  return total;
}

}  // namespace mc::bench

#include "bench/live_trace.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace mc::bench {

namespace {

class TargetPrefixCache final : public PrefixCache {
 public:
  TargetPrefixCache(Target& target, const LiveTraceOptions& options, const std::string& name)
      : target_(target), keys_(options.key_prefix, 0, false), block_size_(options.block_size),
        value_(options.block_size) {
    for (size_t i = 0; i < value_.size(); ++i) value_[i] = static_cast<uint8_t>(i * 31 + 1);
    for (Op op : {Op::kExists, Op::kGet, Op::kPut}) {
      OpResult r;
      r.target = name;
      r.op = op;
      r.value_size = block_size_;
      results_.push_back(r);
    }
  }

  size_t LookupPrefix(std::span<const uint64_t> blocks) override {
    size_t prefix = 0;
    for (size_t i = 0; i < blocks.size() && prefix == i; i += kTraceBatchKeys) {
      size_t n = std::min(kTraceBatchKeys, blocks.size() - i);
      // The first missing block ends the prefix.
      prefix += Call(Op::kExists, blocks.subspan(i, n)).leading_ok;
    }
    // Load the prefix, as the engine would; a block lost since exists ends it.
    size_t loaded = 0;
    for (size_t i = 0; i < prefix && loaded == i; i += kTraceBatchKeys) {
      size_t n = std::min(kTraceBatchKeys, prefix - i);
      loaded += Call(Op::kGet, blocks.subspan(i, n)).leading_ok;
    }
    return loaded;
  }

  void Store(std::span<const uint64_t> blocks) override {
    for (size_t i = 0; i < blocks.size(); i += kTraceBatchKeys) {
      size_t n = std::min(kTraceBatchKeys, blocks.size() - i);
      BatchOutcome out = Call(Op::kPut, blocks.subspan(i, n));
      stored_ += out.ok;
      failed_ += out.failed;
    }
  }

  std::vector<OpResult>& results() { return results_; }
  uint64_t stored() const { return stored_; }
  uint64_t failed() const { return failed_; }

 private:
  BatchOutcome Call(Op op, std::span<const uint64_t> blocks) {
    names_.resize(std::max(names_.size(), blocks.size()));
    for (size_t i = 0; i < blocks.size(); ++i) keys_.Name(blocks[i], &names_[i]);
    std::span<const std::string> names(names_.data(), blocks.size());
    uint64_t t0 = SteadyNowNs();
    BatchOutcome out = op == Op::kPut   ? target_.Put(names, value_)
                       : op == Op::kGet ? target_.Get(names, block_size_)
                                        : target_.Exists(names);
    OpResult& r = results_[op == Op::kExists ? 0 : op == Op::kGet ? 1 : 2];
    r.latency.Record(SteadyNowNs() - t0);
    r.ops += out.ok + out.missing;
    r.hits += out.ok;
    r.errors += out.failed;
    r.bytes += out.bytes;
    ++r.batches;
    if (!out.first_error.ok() && r.first_error.empty()) r.first_error = out.first_error.ToString();
    return out;
  }

  Target& target_;
  KeySpace keys_;
  uint64_t block_size_;
  std::vector<uint8_t> value_;
  std::vector<std::string> names_;
  std::vector<OpResult> results_;
  uint64_t stored_ = 0, failed_ = 0;
};

// Each policy the master can run, replayed offline at `capacity_blocks`.
std::vector<PolicyFigure> ReplayPolicies(const Trace& trace, uint64_t capacity_blocks,
                                         double lru, double belady) {
  std::vector<PolicyFigure> out;
  for (std::string_view name : master::kEvictionPolicyNames) {
    Result<PolicyReplayFigures> r = ReplayPolicy(trace, name, capacity_blocks);
    if (!r.ok()) continue;  // every listed name is known to MakeEvictionPolicy
    PolicyFigure f;
    f.name = std::string(name);
    f.hit_ratio = r->hit_ratio;
    f.gap_closed = GapClosed(lru, belady, f.hit_ratio);
    f.victims = r->victims;
    f.ns_per_eviction = r->ns_per_eviction();
    f.steps_per_eviction = r->steps_per_eviction();
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

Result<LiveTraceResult> ReplayLive(const Trace& trace, const TargetFactory& factory,
                                   const std::string& target_name, const LiveTraceOptions& options) {
  MC_ASSIGN_OR_RETURN(std::unique_ptr<Target> target, factory());
  TargetPrefixCache cache(*target, options, target_name);
  uint64_t start = SteadyNowNs();
  uint64_t first_ms = trace.requests.empty() ? 0 : trace.requests.front().timestamp_ms;
  auto pace = [&](const TraceRequest& req) {
    if (options.speedup <= 0) return;
    double due_ns = double(req.timestamp_ms - std::min(req.timestamp_ms, first_ms)) * 1e6 / options.speedup;
    uint64_t due = start + static_cast<uint64_t>(due_ns);
    uint64_t now = SteadyNowNs();
    if (due > now) std::this_thread::sleep_for(std::chrono::nanoseconds(due - now));
  };
  ReplayStats stats = ReplayTrace(trace, cache, pace);
  double seconds = double(SteadyNowNs() - start) / 1e9;

  LiveTraceResult out;
  TraceSummary& s = out.summary;
  s.file = options.file;
  s.requests = stats.requests;
  s.blocks = stats.blocks;
  s.hit_blocks = stats.hit_blocks;
  s.hit_ratio = stats.hit_ratio();
  s.stored_blocks = cache.stored();
  s.failed_blocks = cache.failed();
  s.block_size = options.block_size;
  s.capacity_blocks = options.capacity_blocks;
  s.seconds = seconds;
  if (options.capacity_blocks > 0) {
    s.lru_hit_ratio = ExactLruHitRatio(trace, options.capacity_blocks);
    s.belady_hit_ratio = BeladyHitRatio(trace, options.capacity_blocks);
    s.gap_closed = GapClosed(s.lru_hit_ratio, s.belady_hit_ratio, s.hit_ratio);
    s.policies = ReplayPolicies(trace, options.capacity_blocks, s.lru_hit_ratio, s.belady_hit_ratio);
  }
  for (OpResult& r : cache.results()) {
    r.seconds = seconds;
    s.bytes_moved += r.bytes;
  }
  out.ops = std::move(cache.results());
  return out;
}

}  // namespace mc::bench

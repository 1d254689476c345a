// Trace replay against exact LRU and against policies behind the seam.
#include <cassert>
#include <chrono>
#include <list>
#include <unordered_map>

#include "eviction/oracle.h"
#include "eviction/trace.h"
#include "eviction/watermark.h"

namespace mc::bench {
namespace {

class ExactLruCache final : public PrefixCache {
 public:
  // `admit` (empty: admit all) is AdmissionMask's: admit[r][i] says whether
  // block i of the r-th request may be stored.
  explicit ExactLruCache(size_t capacity_blocks, AdmissionMask admit = {})
      : capacity_(capacity_blocks), admit_(std::move(admit)) {}

  size_t LookupPrefix(std::span<const uint64_t> blocks) override {
    size_t n = 0;
    while (n < blocks.size() && Touch(blocks[n])) ++n;
    return n;
  }

  void Store(std::span<const uint64_t> blocks) override {
    // Store gets the request's blocks after its cached prefix.
    const size_t offset = admit_.empty() ? 0 : admit_[request_].size() - blocks.size();
    for (size_t i = 0; i < blocks.size(); ++i) {
      const uint64_t b = blocks[i];
      if (Touch(b) || capacity_ == 0) continue;
      if (!admit_.empty() && !admit_[request_][offset + i]) continue;
      if (map_.size() == capacity_) {
        map_.erase(order_.back());
        order_.pop_back();
      }
      order_.push_front(b);
      map_.emplace(b, order_.begin());
    }
    ++request_;
  }

 private:
  bool Touch(uint64_t b) {
    auto it = map_.find(b);
    if (it == map_.end()) return false;
    order_.splice(order_.begin(), order_, it->second);
    return true;
  }

  size_t capacity_;
  AdmissionMask admit_;
  size_t request_ = 0;  // requests stored so far
  std::list<uint64_t> order_;  // front = most recent
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> map_;
};

class PolicyCache final : public PrefixCache {
 public:
  // Victims taken so far and the wall time their NextVictim calls took.
  uint64_t victims() const { return victims_; }
  uint64_t victim_ns() const { return victim_ns_; }
  const master::EvictionPolicy& policy() const { return *policy_; }

  PolicyCache(std::unique_ptr<master::EvictionPolicy> policy, size_t capacity_blocks,
              TouchOrder order, const PoolModel& pool)
      : policy_(std::move(policy)), capacity_(capacity_blocks), order_(order), pool_(pool) {}

  size_t LookupPrefix(std::span<const uint64_t> blocks) override {
    size_t n = 0;
    while (n < blocks.size() && ids_.count(blocks[n])) ++n;
    ForEach(blocks.first(n), [&](uint64_t b) { Access(ids_.at(b)); });
    // The live replay asks the master about every block of the request in
    // one BatchExistKey, so each block not held is a miss the policy sees.
    ForEach(blocks.subspan(n), [&](uint64_t b) {
      if (!ids_.count(b)) policy_->OnMiss(b);
    });
    return n;
  }

  void Store(std::span<const uint64_t> blocks) override {
    ForEach(blocks, [&](uint64_t b) {
      auto it = ids_.find(b);
      if (it != ids_.end()) {
        Access(it->second);
        return;
      }
      if (capacity_ == 0) return;
      if (ids_.size() == capacity_) {
        Evict();
        puts_evicted_ = true;
      }
      master::ObjectId id = next_id_++;
      ids_.emplace(b, id);
      blocks_.emplace(id, b);
      // The key hash is the block's hash id: a re-stored block finds its ghost.
      policy_->OnInsert(id, b, kBlockBytes);
      ++puts_;
      if (pool_.puts_per_tick > 0 && ++puts_since_tick_ == pool_.puts_per_tick) Tick();
    });
  }

 private:
  // Blocks all have one size; only the count matters against the capacity.
  static constexpr uint64_t kBlockBytes = 1;

  template <typename Fn>
  void ForEach(std::span<const uint64_t> blocks, Fn fn) {
    if (order_ == TouchOrder::kChainOrder) {
      for (uint64_t b : blocks) fn(b);
    } else {
      for (size_t i = blocks.size(); i-- > 0;) fn(blocks[i]);
    }
  }

  void Access(master::ObjectId id) {
    policy_->OnAccess(id);
    if (pool_.lease_puts > 0) leased_until_[id] = puts_ + pool_.lease_puts;
  }

  void Evict() {
    const auto t0 = std::chrono::steady_clock::now();
    std::optional<master::ObjectId> victim = policy_->NextVictim([&](master::ObjectId id) {
      auto it = leased_until_.find(id);
      return it == leased_until_.end() || it->second <= puts_;
    });
    // Everything leased: the live master would fail the put; the model lets
    // it through so the replay goes on (the live replay counts failed puts).
    if (!victim) victim = policy_->NextVictim([](master::ObjectId) { return true; });
    victim_ns_ += uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now() - t0)
                               .count());
    ++victims_;
    assert(victim && "a full cache must yield a victim");
    auto it = blocks_.find(*victim);
    assert(it != blocks_.end() && "policy returned an id it was never given");
    ids_.erase(it->second);
    blocks_.erase(it);
    leased_until_.erase(*victim);
    assert(policy_->tracked() == ids_.size());
  }

  void Tick() {
    uint64_t target = master::BackgroundEvictionBytes(
        {.capacity_bytes = capacity_ * kBlockBytes,
         .allocated_bytes = ids_.size() * kBlockBytes,
         .high_watermark_ratio = pool_.high_watermark_ratio,
         .eviction_ratio = pool_.eviction_ratio,
         .puts_evicted = puts_evicted_});
    puts_evicted_ = false;
    for (uint64_t freed = 0; freed < target && !ids_.empty(); freed += kBlockBytes) Evict();
    puts_since_tick_ = 0;
  }

  std::unique_ptr<master::EvictionPolicy> policy_;
  size_t capacity_;
  TouchOrder order_;
  uint64_t victims_ = 0;
  uint64_t victim_ns_ = 0;
  PoolModel pool_;
  uint64_t puts_since_tick_ = 0;
  bool puts_evicted_ = false;  // since the last tick
  uint64_t puts_ = 0;
  std::unordered_map<master::ObjectId, uint64_t> leased_until_;  // id -> puts_
  master::ObjectId next_id_ = 1;
  std::unordered_map<uint64_t, master::ObjectId> ids_;     // block -> id
  std::unordered_map<master::ObjectId, uint64_t> blocks_;  // id -> block
};

}  // namespace

ReplayStats ReplayTrace(const Trace& trace, PrefixCache& cache,
                        const std::function<void(const TraceRequest&)>& before_each) {
  ReplayStats stats;
  for (const TraceRequest& req : trace.requests) {
    if (before_each) before_each(req);
    std::span<const uint64_t> blocks(req.hash_ids);
    size_t hit = cache.LookupPrefix(blocks);
    assert(hit <= blocks.size());
    cache.Store(blocks.subspan(hit));
    ++stats.requests;
    stats.blocks += blocks.size();
    stats.hit_blocks += hit;
  }
  return stats;
}

std::unique_ptr<PrefixCache> MakeExactLruCache(size_t capacity_blocks) {
  return std::make_unique<ExactLruCache>(capacity_blocks);
}

std::unique_ptr<PrefixCache> MakeAdmittingLruCache(size_t capacity_blocks, AdmissionMask admit) {
  return std::make_unique<ExactLruCache>(capacity_blocks, std::move(admit));
}

std::unique_ptr<PrefixCache> MakePolicyCache(std::unique_ptr<master::EvictionPolicy> policy,
                                             size_t capacity_blocks, TouchOrder order,
                                             const PoolModel& pool) {
  return std::make_unique<PolicyCache>(std::move(policy), capacity_blocks, order, pool);
}

double ExactLruHitRatio(const Trace& trace, size_t capacity_blocks) {
  auto cache = MakeExactLruCache(capacity_blocks);
  return ReplayTrace(trace, *cache).hit_ratio();
}

Result<PolicyReplayFigures> ReplayPolicy(const Trace& trace, std::string_view policy_name,
                                         size_t capacity_blocks, TouchOrder order,
                                         const PoolModel& pool) {
  auto policy = master::MakeEvictionPolicy(policy_name, capacity_blocks);
  if (!policy) {
    return Error(ErrorCode::INVALID_PARAMS,
                 "unknown eviction policy '" + std::string(policy_name) + "'");
  }
  PolicyCache cache(std::move(policy), capacity_blocks, order, pool);
  PolicyReplayFigures f;
  f.hit_ratio = ReplayTrace(trace, cache).hit_ratio();
  f.victims = cache.victims();
  f.victim_ns = cache.victim_ns();
  f.victim_steps = cache.policy().stats().victim_steps;
  return f;
}

Result<double> PolicyHitRatio(const Trace& trace, std::string_view policy_name,
                              size_t capacity_blocks, TouchOrder order,
                              const PoolModel& pool) {
  MC_ASSIGN_OR_RETURN(PolicyReplayFigures f,
                      ReplayPolicy(trace, policy_name, capacity_blocks, order, pool));
  return f.hit_ratio;
}

}  // namespace mc::bench

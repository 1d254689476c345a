// Belady's MIN over a prefix-cache replay: the offline optimum the policies
// are measured against. Knowing the whole trace, a full cache evicts the
// cached block whose next request lies farthest ahead (a block never
// requested again first). It is demand MIN: every block a request stores is
// admitted, as the master admits every put, so it is the optimum a policy
// behind the master's seam could reach with perfect foresight.
#include <algorithm>
#include <cassert>
#include <queue>
#include <unordered_map>

#include "eviction/oracle.h"
#include "eviction/trace.h"

namespace mc::bench {

// next[r][i]: index of the next request after r holding block i of r.
std::vector<std::vector<uint64_t>> NextUses(const Trace& trace) {
  std::vector<std::vector<uint64_t>> next(trace.requests.size());
  std::unordered_map<uint64_t, uint64_t> seen_at;  // block -> later request
  for (size_t r = trace.requests.size(); r-- > 0;) {
    const std::vector<uint64_t>& ids = trace.requests[r].hash_ids;
    next[r].resize(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      auto it = seen_at.find(ids[i]);
      next[r][i] = it == seen_at.end() ? kNeverAgain : it->second;
    }
    for (uint64_t b : ids) seen_at[b] = r;
  }
  return next;
}

namespace {


class BeladyCache final : public PrefixCache {
 public:
  BeladyCache(size_t capacity_blocks, std::vector<std::vector<uint64_t>> next_uses)
      : capacity_(capacity_blocks), next_uses_(std::move(next_uses)) {}

  size_t LookupPrefix(std::span<const uint64_t> blocks) override {
    size_t n = 0;
    while (n < blocks.size() && cached_.count(blocks[n])) ++n;
    for (size_t i = 0; i < n; ++i) Touch(blocks[i], i);
    return n;
  }

  void Store(std::span<const uint64_t> blocks) override {
    const size_t offset = next_uses_[request_].size() - blocks.size();
    for (size_t i = 0; i < blocks.size(); ++i) {
      if (cached_.count(blocks[i]) == 0) {
        if (capacity_ == 0) continue;
        if (cached_.size() == capacity_) EvictFarthest();
      }
      Touch(blocks[i], offset + i);
    }
    ++request_;
  }

 private:
  void Touch(uint64_t block, size_t index) {
    uint64_t next = next_uses_[request_][index];
    cached_[block] = next;
    heap_.push({next, block});
  }

  // Entries in the heap go stale when their block is touched again; the
  // one that matches `cached_` is current.
  void EvictFarthest() {
    while (true) {
      assert(!heap_.empty());
      auto [next, block] = heap_.top();
      heap_.pop();
      auto it = cached_.find(block);
      if (it != cached_.end() && it->second == next) {
        cached_.erase(it);
        return;
      }
    }
  }

  size_t capacity_;
  std::vector<std::vector<uint64_t>> next_uses_;
  size_t request_ = 0;
  std::unordered_map<uint64_t, uint64_t> cached_;  // block -> its next request
  std::priority_queue<std::pair<uint64_t, uint64_t>> heap_;  // (next request, block)
};

}  // namespace

double BeladyHitRatio(const Trace& trace, size_t capacity_blocks) {
  BeladyCache cache(capacity_blocks, NextUses(trace));
  return ReplayTrace(trace, cache).hit_ratio();
}

double GapClosed(double lru, double belady, double policy) {
  if (belady <= lru) return 0.0;
  return (policy - lru) / (belady - lru);
}

}  // namespace mc::bench

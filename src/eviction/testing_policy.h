// ExactLruPolicy: an exact LRU EvictionPolicy for the master's tests and
// benchmark, simple enough to be obviously right. Not thread-safe.
#pragma once

#include <list>
#include <unordered_map>
#include <vector>

#include "eviction/policy.h"

namespace mc::master {

class ExactLruPolicy final : public EvictionPolicy {
 public:
  void OnInsert(ObjectId id, uint64_t, uint64_t) override {
    order_.push_front(id);
    where_[id] = order_.begin();
  }
  void OnAccess(ObjectId id) override {
    auto it = where_.find(id);
    if (it != where_.end()) order_.splice(order_.begin(), order_, it->second);
  }
  void OnRemove(ObjectId id) override {
    auto it = where_.find(id);
    if (it == where_.end()) return;
    order_.erase(it->second);
    where_.erase(it);
  }
  std::optional<ObjectId> NextVictim(const std::function<bool(ObjectId)>& evictable) override {
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      if (!evictable(*it)) continue;
      const ObjectId id = *it;
      order_.erase(std::next(it).base());
      where_.erase(id);
      return id;
    }
    return std::nullopt;
  }
  std::string_view name() const override { return "exact-lru"; }
  size_t tracked() const override { return where_.size(); }

 private:
  std::list<ObjectId> order_;  // most recent first
  std::unordered_map<ObjectId, std::list<ObjectId>::iterator> where_;
};

// Tests: every object counts as evictable, and a policy's victims in order
// until it has none.
inline bool EveryObject(ObjectId) { return true; }
inline std::vector<ObjectId> DrainVictims(EvictionPolicy& p) {
  std::vector<ObjectId> out;
  while (auto v = p.NextVictim(EveryObject)) out.push_back(*v);
  return out;
}

}  // namespace mc::master

// ClockPolicy ("lru"): approximate LRU by the CLOCK algorithm, the cheap
// approximation the reference's sampled LRU stands for. Each object has one
// reference bit set on insert and access; the hand sweeps the slots, clearing
// set bits and evicting the first evictable object whose bit is clear. O(1)
// per insert/access/remove, amortized O(1) per victim (at most two sweeps when
// nothing is evictable). About 32 bytes per object. Not thread-safe.
#pragma once

#include <vector>

#include "eviction/policy.h"
#include "eviction/table.h"

namespace mc::master {

class ClockPolicy final : public EvictionPolicy {
 public:
  explicit ClockPolicy(size_t capacity_hint_objects, IdSpace ids = IdSpace::kAny);

  void OnInsert(ObjectId id, uint64_t key_hash, uint64_t size_bytes) override;
  void OnAccess(ObjectId id) override;
  void OnRemove(ObjectId id) override;
  std::optional<ObjectId> NextVictim(
      const std::function<bool(ObjectId)>& evictable) override;
  std::string_view name() const override { return "lru"; }
  size_t tracked() const override { return index_.size(); }

  // Heap bytes held by the policy (for the per-object memory budget).
  size_t memory_bytes() const override;

 private:
  enum class SlotState : uint8_t { kFree, kClear, kReferenced };
  struct Slot {
    ObjectId id = 0;
    SlotState state = SlotState::kFree;
  };

  void Release(uint32_t slot, ObjectId id);

  std::vector<Slot> ring_;
  std::vector<uint32_t> free_slots_;
  eviction::IdIndex index_;  // id -> ring slot
  size_t hand_ = 0;
};

}  // namespace mc::master

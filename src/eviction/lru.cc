#include "eviction/lru.h"

#include <cassert>

namespace mc::master {

ClockPolicy::ClockPolicy(size_t capacity_hint_objects, IdSpace ids)
    : index_(ids == IdSpace::kSlotted) {
  ring_.reserve(capacity_hint_objects);
}

void ClockPolicy::OnInsert(ObjectId id, uint64_t /*key_hash*/, uint64_t /*size_bytes*/) {
  assert(index_.Find(id) == eviction::kNoSlot && "OnInsert of a tracked object");
  uint32_t slot;
  if (!free_slots_.empty()) {
    // Usually the slot just evicted, right behind the hand: the newest object
    // is the last the hand reaches, as in LRU.
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    assert(ring_.size() < eviction::kNoSlot);
    slot = static_cast<uint32_t>(ring_.size());
    ring_.emplace_back();
  }
  ring_[slot] = Slot{id, SlotState::kReferenced};
  index_.Insert(id, slot);
}

void ClockPolicy::OnAccess(ObjectId id) {
  uint32_t slot = index_.Find(id);
  if (slot == eviction::kNoSlot) return;  // not complete yet, or already gone
  ring_[slot].state = SlotState::kReferenced;
}

void ClockPolicy::OnRemove(ObjectId id) {
  uint32_t slot = index_.Find(id);
  if (slot == eviction::kNoSlot) return;
  Release(slot, id);
}

void ClockPolicy::Release(uint32_t slot, ObjectId id) {
  ring_[slot].state = SlotState::kFree;
  free_slots_.push_back(slot);
  bool erased = index_.Erase(id);
  assert(erased);
  (void)erased;
}

std::optional<ObjectId> ClockPolicy::NextVictim(
    const std::function<bool(ObjectId)>& evictable) {
  size_t n = ring_.size();
  // The first sweep clears every reference bit it passes, so the second finds
  // any evictable object: 2n steps decide "nothing evictable".
  for (size_t step = 0; step < 2 * n; ++step) {
    size_t i = hand_;
    hand_ = (hand_ + 1 == n) ? 0 : hand_ + 1;
    Slot& s = ring_[i];
    if (s.state == SlotState::kFree) continue;
    if (s.state == SlotState::kReferenced) {
      s.state = SlotState::kClear;
      continue;
    }
    if (!evictable(s.id)) continue;  // stays, bit and place unchanged
    ObjectId id = s.id;
    Release(static_cast<uint32_t>(i), id);
    return id;
  }
  return std::nullopt;
}

size_t ClockPolicy::memory_bytes() const {
  return ring_.capacity() * sizeof(Slot) + free_slots_.capacity() * sizeof(uint32_t) +
         index_.memory_bytes();
}

}  // namespace mc::master

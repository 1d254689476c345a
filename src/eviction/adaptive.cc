#include "eviction/adaptive.h"

#include <algorithm>
#include <cassert>

#include "common/prefault.h"

namespace mc::master {

using eviction::kNoSlot;

AdaptivePolicy::AdaptivePolicy(size_t capacity_hint_objects, bool duel, IdSpace ids)
    : capacity_hint_objects_(capacity_hint_objects),
      duel_(duel ? std::make_unique<PolicyDuel>() : nullptr),
      slotted_(ids == IdSpace::kSlotted) {}

AdaptivePolicy::~AdaptivePolicy() = default;

void AdaptivePolicy::UseFacts(const ObjectFacts* facts) {
  assert(live_count_ == 0 && "UseFacts after an insert");
  if (slotted_ && facts != nullptr) facts_ = facts;
}

uint32_t AdaptivePolicy::FindLive(ObjectId id) const {
  if (!slotted_) return live_index_.Find(id);
  const auto slot = static_cast<uint32_t>(id);
  return slot < live_list_.size() && live_list_[slot] != kNoList && facts_->IdAt(slot) == id
             ? slot
             : kNoSlot;
}

void AdaptivePolicy::PrefaultReserved(Prefaulter& prefaulter) const {
  const auto [nodes, bytes] = live_.reserved();
  prefaulter.Add(nodes, bytes);
  prefaulter.Add(live_list_.data(), live_list_.capacity());
}

uint32_t AdaptivePolicy::AddLive(ObjectId id, uint64_t key_hash, uint64_t size_bytes,
                                 ListId list) {
  uint32_t slot;
  if (slotted_) {
    slot = static_cast<uint32_t>(id);
    live_.AllocateAt(slot);
  } else {
    slot = live_.Allocate();
    live_index_.Insert(id, slot);
  }
  if (slot >= live_list_.size()) live_list_.resize(size_t{slot} + 1, kNoList);
  assert(live_list_[slot] == kNoList && "two live ids of one slot");
  live_list_[slot] = list;
  if (facts_ == &own_) own_.Set(slot, id, key_hash, size_bytes);
  ++live_count_;
  return slot;
}

void AdaptivePolicy::RemoveLive(uint32_t slot) {
  assert(live_count_ > 0 && live_list_[slot] != kNoList);
  --live_count_;
  live_list_[slot] = kNoList;
  if (slotted_) return;
  const bool erased = live_index_.Erase(facts_->IdAt(slot));
  assert(erased);
  (void)erased;
  live_.Free(slot);
}

void AdaptivePolicy::LinkNewest(uint32_t slot) {
  LiveNode& n = live_[slot];
  n.older = newest_;
  n.newer = kNoSlot;
  if (newest_ != kNoSlot) live_[newest_].newer = slot; else oldest_ = slot;
  newest_ = slot;
}

void AdaptivePolicy::UnlinkRecency(uint32_t slot) {
  LiveNode& n = live_[slot];
  if (n.older != kNoSlot) live_[n.older].newer = n.newer; else oldest_ = n.newer;
  if (n.newer != kNoSlot) live_[n.newer].older = n.older; else newest_ = n.older;
}

size_t AdaptivePolicy::ghost_limit_objects() const {
  if (capacity_hint_objects_ > 0) return capacity_hint_objects_;
  return std::max(kMinGhostLimitObjects, tracked_high_water_);
}

AdaptivePolicy::ListId AdaptivePolicy::ConsumeGhost(uint64_t key_hash,
                                                    uint64_t size_bytes) {
  uint32_t g = ghost_index_.Find(key_hash);
  if (g == kNoSlot) return kT1;
  ListId was = static_cast<ListId>(ghost_[g].list);
  if (!ghost_[g].adapted) AdaptTarget(was, size_bytes);
  ghost_.Unlink(Ghost(was), g);
  ghost_.Free(g);
  ghost_index_.Erase(key_hash);
  return kT2;
}

void AdaptivePolicy::AdaptTarget(ListId list, uint64_t size_bytes) {
  // ARC's step: move p by the object's size, scaled by how much smaller the
  // list that was hit is than the other (hits in a small list say more).
  uint64_t b1 = std::max<uint64_t>(b1_.bytes, 1), b2 = std::max<uint64_t>(b2_.bytes, 1);
  uint64_t step = std::max<uint64_t>(size_bytes, 1);
  if (list == kB1) {
    step *= std::max<uint64_t>(1, b2 / b1);
    target_t1_bytes_ = std::min(cache_bytes_, target_t1_bytes_ + step);
  } else {
    step *= std::max<uint64_t>(1, b1 / b2);
    target_t1_bytes_ = target_t1_bytes_ > step ? target_t1_bytes_ - step : 0;
  }
}

void AdaptivePolicy::OnMiss(uint64_t key_hash) {
  if (duel_) duel_->OnMiss(key_hash);
  uint32_t g = ghost_index_.Find(key_hash);
  if (g == kNoSlot || ghost_[g].adapted) return;
  AdaptTarget(static_cast<ListId>(ghost_[g].list), ghost_[g].size_bytes);
  ghost_[g].adapted = 1;
}

void AdaptivePolicy::OnInsert(ObjectId id, uint64_t key_hash, uint64_t size_bytes) {
  assert(FindLive(id) == kNoSlot && "OnInsert of a tracked object");
  in_round_ = false;
  ListId list = ConsumeGhost(key_hash, size_bytes);
  uint32_t slot = AddLive(id, key_hash, size_bytes, list);
  assert(facts_->KeyHashAt(slot) == key_hash && facts_->SizeAt(slot) == size_bytes);
  PushLive(list, slot);
  LinkNewest(slot);
  tracked_high_water_ = std::max(tracked_high_water_, live_count_);
  if (duel_) {
    duel_->SetTrackedHighWater(tracked_high_water_);
    duel_->OnReference(key_hash);
  }
}

void AdaptivePolicy::OnAccess(ObjectId id) {
  uint32_t slot = FindLive(id);
  if (slot == kNoSlot) return;  // not complete yet, or already gone
  UnlinkLive(slot);
  PushLive(kT2, slot);
  UnlinkRecency(slot);
  LinkNewest(slot);
  if (duel_) duel_->OnReference(facts_->KeyHashAt(slot));
}

void AdaptivePolicy::OnRemove(ObjectId id) {
  uint32_t slot = FindLive(id);
  if (slot == kNoSlot) return;
  // A removal the policy did not choose says nothing about the key's value,
  // so it leaves no ghost.
  if (duel_) duel_->OnRemove(facts_->KeyHashAt(slot));
  UnlinkLive(slot);
  UnlinkRecency(slot);
  RemoveLive(slot);
}

uint32_t AdaptivePolicy::FindEvictableByRecency(
    const std::function<bool(ObjectId)>& evictable) const {
  for (uint32_t s = oldest_; s != kNoSlot; s = live_[s].newer) {
    if (evictable(facts_->IdAt(s))) return s;
  }
  return kNoSlot;
}

uint32_t AdaptivePolicy::FindEvictable(
    const eviction::NodeList& list, const std::function<bool(ObjectId)>& evictable) const {
  for (uint32_t s = list.lru; s != kNoSlot; s = live_[s].next) {
    if (evictable(facts_->IdAt(s))) return s;
  }
  return kNoSlot;
}

std::optional<ObjectId> AdaptivePolicy::NextVictim(
    const std::function<bool(ObjectId)>& evictable) {
  // The master asks when the pool is full, or above its high watermark, so
  // the live size when a round of victims starts is the cache size. Not the
  // live size at every victim: a background round frees several in a row,
  // and shrinking c with each would trim the ghosts (and the duel's shadows)
  // of the very keys it is evicting.
  if (!in_round_) {
    in_round_ = true;
    cache_bytes_ = t1_.bytes + t2_.bytes;
    cache_objects_ = live_count_;
  }
  target_t1_bytes_ = std::min(target_t1_bytes_, cache_bytes_);
  if (duel_) duel_->SetCapacity(cache_objects_);
  uint32_t slot;
  const bool by_recency = evicting_by_recency();
  if (by_recency) {
    slot = FindEvictableByRecency(evictable);
  } else {
    bool from_t1 = t1_.count > 0 && t1_.bytes > target_t1_bytes_;
    slot = FindEvictable(from_t1 ? t1_ : t2_, evictable);
    if (slot == kNoSlot) slot = FindEvictable(from_t1 ? t2_ : t1_, evictable);
  }
  if (slot == kNoSlot) return std::nullopt;
  if (stats_.victims > 0 && by_recency != last_by_recency_) ++stats_.mode_switches;
  last_by_recency_ = by_recency;
  ++stats_.victims;
  if (by_recency) ++stats_.victims_by_recency;

  const ObjectId id = facts_->IdAt(slot);
  const uint64_t key_hash = facts_->KeyHashAt(slot), size_bytes = SizeOf(slot);
  const ListId list = static_cast<ListId>(live_list_[slot]);
  UnlinkLive(slot);
  UnlinkRecency(slot);
  RemoveLive(slot);
  AddGhost(key_hash, size_bytes, list == kT1 ? kB1 : kB2);
  return id;
}

void AdaptivePolicy::AddGhost(uint64_t key_hash, uint64_t size_bytes, ListId list) {
  // A stale ghost under the same hash (two keys colliding) is replaced.
  uint32_t old = ghost_index_.Find(key_hash);
  if (old != kNoSlot) {
    ghost_.Unlink(Ghost(ghost_[old].list), old);
    ghost_.Free(old);
    ghost_index_.Erase(key_hash);
  }
  uint32_t g = ghost_.Allocate();
  ghost_[g].key_hash = key_hash;
  ghost_[g].size_bytes = std::min(size_bytes, kMaxNodeBytes);
  ghost_[g].list = list;
  ghost_.PushMru(Ghost(list), g);
  ghost_index_.Insert(key_hash, g);
  TrimGhosts();
}

void AdaptivePolicy::DropGhost(ListId list) {
  eviction::NodeList& l = Ghost(list);
  uint32_t g = l.lru;
  assert(g != kNoSlot);
  ghost_index_.Erase(ghost_[g].key_hash);
  ghost_.Unlink(l, g);
  ghost_.Free(g);
}

void AdaptivePolicy::TrimGhosts() {
  // ARC's bounds: recency history (T1 + B1) within c, all history within 2c.
  while (b1_.count > 0 && t1_.bytes + b1_.bytes > cache_bytes_) DropGhost(kB1);
  while (b2_.count > 0 && b1_.bytes + b2_.bytes > cache_bytes_) DropGhost(kB2);
  size_t limit = ghost_limit_objects();
  while (ghost_index_.size() > limit) DropGhost(b2_.count > 0 ? kB2 : kB1);
}

size_t AdaptivePolicy::memory_bytes() const {
  return live_.memory_bytes() + live_list_.capacity() + live_index_.memory_bytes() +
         own_.memory_bytes() + ghost_.memory_bytes() +
         ghost_index_.memory_bytes() + (duel_ ? duel_->memory_bytes() : 0);
}

}  // namespace mc::master

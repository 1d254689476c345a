#include "eviction/adaptive.h"

#include <algorithm>
#include <cassert>

namespace mc::master {

using eviction::kNoSlot;

AdaptivePolicy::AdaptivePolicy(size_t capacity_hint_objects, bool duel, IdSpace ids)
    : capacity_hint_objects_(capacity_hint_objects),
      duel_(duel ? std::make_unique<PolicyDuel>() : nullptr),
      live_(ids == IdSpace::kSlotted) {}

AdaptivePolicy::~AdaptivePolicy() = default;

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
  assert(live_.Find(id) == kNoSlot && "OnInsert of a tracked object");
  in_round_ = false;
  ListId list = ConsumeGhost(key_hash, size_bytes);
  uint32_t slot = live_.Add(id);
  LiveNode& n = live_[slot];
  n.key_hash = key_hash;
  n.size_bytes = std::min(size_bytes, kMaxNodeBytes);
  n.list = list;
  live_.PushMru(Live(list), slot);
  LinkNewest(slot);
  tracked_high_water_ = std::max(tracked_high_water_, live_.size());
  if (duel_) {
    duel_->SetTrackedHighWater(tracked_high_water_);
    duel_->OnReference(key_hash);
  }
}

void AdaptivePolicy::OnAccess(ObjectId id) {
  uint32_t slot = live_.Find(id);
  if (slot == kNoSlot) return;  // not complete yet, or already gone
  live_.Unlink(Live(live_[slot].list), slot);
  live_[slot].list = kT2;
  live_.PushMru(t2_, slot);
  UnlinkRecency(slot);
  LinkNewest(slot);
  if (duel_) duel_->OnReference(live_[slot].key_hash);
}

void AdaptivePolicy::OnRemove(ObjectId id) {
  uint32_t slot = live_.Find(id);
  if (slot == kNoSlot) return;
  // A removal the policy did not choose says nothing about the key's value,
  // so it leaves no ghost.
  if (duel_) duel_->OnRemove(live_[slot].key_hash);
  live_.Unlink(Live(live_[slot].list), slot);
  UnlinkRecency(slot);
  live_.Remove(slot);
}

uint32_t AdaptivePolicy::FindEvictableByRecency(
    const std::function<bool(ObjectId)>& evictable) const {
  for (uint32_t s = oldest_; s != kNoSlot; s = live_[s].newer) {
    if (evictable(live_[s].id)) return s;
  }
  return kNoSlot;
}

uint32_t AdaptivePolicy::FindEvictable(
    const eviction::NodeList& list, const std::function<bool(ObjectId)>& evictable) const {
  for (uint32_t s = list.lru; s != kNoSlot; s = live_[s].next) {
    if (evictable(live_[s].id)) return s;
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
    cache_objects_ = live_.size();
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

  LiveNode n = live_[slot];
  live_.Unlink(Live(n.list), slot);
  UnlinkRecency(slot);
  live_.Remove(slot);
  AddGhost(n.key_hash, n.size_bytes, n.list == kT1 ? kB1 : kB2);
  return n.id;
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
  return live_.memory_bytes() + ghost_.memory_bytes() +
         ghost_index_.memory_bytes() + (duel_ ? duel_->memory_bytes() : 0);
}

}  // namespace mc::master

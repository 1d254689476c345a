#include "eviction/probation.h"

#include <algorithm>
#include <cassert>

namespace mc::master {

using eviction::kNoSlot;

ProbationPolicy::ProbationPolicy(size_t capacity_hint_objects, IdSpace ids, bool duel)
    : nodes_(ids == IdSpace::kSlotted),
      duel_(duel ? std::make_unique<PolicyDuel>([] {
        return std::make_unique<ProbationPolicy>(0, IdSpace::kAny, /*duel=*/false);
      })
                 : nullptr),
      capacity_hint_objects_(capacity_hint_objects) {
  SizeGhosts();
}

ProbationPolicy::~ProbationPolicy() = default;

void ProbationPolicy::SizeGhosts() {
  // Regrown (forgetting every ghost) only when the pool has doubled since.
  const size_t want = std::max({nodes_.size(), capacity_hint_objects_, kMinGhosts}) *
                      kGhostsPerObject / 2;
  if (want > 2 * ghosts_.entries() || ghosts_.entries() == 0) ghosts_.Resize(want);
}

bool ProbationPolicy::OnProbation(ObjectId id) const {
  uint32_t slot = nodes_.Find(id);
  return slot != kNoSlot && nodes_[slot].queue == kProbation;
}

void ProbationPolicy::OnInsert(ObjectId id, uint64_t key_hash, uint64_t size_bytes) {
  assert(nodes_.Find(id) == kNoSlot && "OnInsert of a tracked object");
  in_round_ = false;
  uint32_t slot = nodes_.Add(id);
  Node& n = nodes_[slot];
  n.key_hash = key_hash;
  n.size_bytes = std::min(size_bytes, kMaxNodeBytes);
  n.last_tick = ++clock_;
  // Back soon after probation let it go: it has shown it is reused.
  n.queue = ghosts_.Contains(key_hash) ? kMain : kProbation;
  nodes_.PushMru(List(n.queue), slot);
  tracked_high_water_ = std::max(tracked_high_water_, nodes_.size());
  if (duel_) {
    duel_->SetTrackedHighWater(tracked_high_water_);
    duel_->OnReference(key_hash);
  }
}

void ProbationPolicy::OnAccess(ObjectId id) {
  uint32_t slot = nodes_.Find(id);
  if (slot == kNoSlot) return;  // not complete yet, or already gone
  Node& n = nodes_[slot];
  nodes_.Unlink(List(n.queue), slot);
  n.queue = kMain;  // a second use ends probation
  n.last_tick = ++clock_;
  nodes_.PushMru(main_, slot);
  if (duel_) duel_->OnReference(n.key_hash);
}

void ProbationPolicy::OnMiss(uint64_t key_hash) {
  if (duel_) duel_->OnMiss(key_hash);
}

void ProbationPolicy::OnRemove(ObjectId id) {
  uint32_t slot = nodes_.Find(id);
  if (slot == kNoSlot) return;
  if (duel_) duel_->OnRemove(nodes_[slot].key_hash);
  Drop(slot);
}

void ProbationPolicy::Drop(uint32_t slot) {
  Node& n = nodes_[slot];
  nodes_.Unlink(List(n.queue), slot);
  nodes_.Remove(slot);
}

uint32_t ProbationPolicy::FindEvictable(const eviction::NodeList& list,
                                        const std::function<bool(ObjectId)>& evictable,
                                        size_t max_steps) {
  uint32_t slot = list.lru;
  for (size_t step = 0; slot != kNoSlot && step < max_steps; ++step) {
    ++stats_.victim_steps;
    if (evictable(nodes_[slot].id)) return slot;
    slot = nodes_[slot].next;
  }
  return kNoSlot;
}

uint32_t ProbationPolicy::PickVictim(const std::function<bool(ObjectId)>& evictable,
                                     size_t max_steps, bool by_recency) {
  if (by_recency) {
    // Both queues are in recency order: the least recent of their first
    // evictable objects is the least recent evictable one within the walk.
    uint32_t p = FindEvictable(probation_, evictable, max_steps);
    uint32_t m = FindEvictable(main_, evictable, max_steps);
    if (p == kNoSlot || m == kNoSlot) return p == kNoSlot ? m : p;
    return nodes_[p].last_tick < nodes_[m].last_tick ? p : m;
  }
  const bool probation_first =
      double(probation_.count) > kProbationShare * double(nodes_.size());
  uint32_t slot = FindEvictable(probation_first ? probation_ : main_, evictable, max_steps);
  if (slot == kNoSlot)
    slot = FindEvictable(probation_first ? main_ : probation_, evictable, max_steps);
  return slot;
}

std::optional<ObjectId> ProbationPolicy::NextVictim(
    const std::function<bool(ObjectId)>& evictable) {
  // The master asks when full (or above its high watermark): the live count
  // when a round of victims begins is the cache size the shadows model.
  if (!in_round_) {
    in_round_ = true;
    if (duel_) duel_->SetCapacity(nodes_.size());
  }
  const bool by_recency = evicting_by_recency();
  // Bounded walks first; past the bound only when both queues' least
  // recent objects are all leased or pinned.
  for (size_t bound : {kMaxSkipsPerQueue, SIZE_MAX}) {
    uint32_t slot = PickVictim(evictable, bound, by_recency);
    if (slot == kNoSlot) continue;
    const Node n = nodes_[slot];
    Drop(slot);
    SizeGhosts();
    ghosts_.Add(n.key_hash);
    if (stats_.victims > 0 && by_recency != last_by_recency_) ++stats_.mode_switches;
    last_by_recency_ = by_recency;
    ++stats_.victims;
    if (by_recency) ++stats_.victims_by_recency;
    return n.id;
  }
  return std::nullopt;
}

size_t ProbationPolicy::memory_bytes() const {
  return nodes_.memory_bytes() + ghosts_.memory_bytes() +
         (duel_ ? duel_->memory_bytes() : 0);
}

}  // namespace mc::master

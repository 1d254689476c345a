#include "eviction/probation.h"

#include <algorithm>
#include <cassert>

namespace mc::master {

using eviction::kNoSlot;

ProbationPolicy::ProbationPolicy(size_t capacity_hint_objects, IdSpace ids)
    : index_(ids == IdSpace::kSlotted), capacity_hint_objects_(capacity_hint_objects) {
  SizeGhosts();
}

bool ProbationPolicy::OnProbation(ObjectId id) const {
  uint32_t slot = index_.Find(id);
  return slot != kNoSlot && nodes_[slot].queue == kProbation;
}

void ProbationPolicy::SizeGhosts() {
  // Regrown (forgetting every ghost) only when the pool has doubled since.
  const size_t want = std::max({index_.size(), capacity_hint_objects_, kMinGhosts}) *
                      kGhostsPerObject / 2;
  if (want > 2 * ghosts_.entries() || ghosts_.entries() == 0) ghosts_.Resize(want);
}

void ProbationPolicy::OnInsert(ObjectId id, uint64_t key_hash, uint64_t size_bytes) {
  assert(index_.Find(id) == kNoSlot && "OnInsert of a tracked object");
  uint32_t slot = nodes_.Allocate();
  Node& n = nodes_[slot];
  n.id = id;
  n.key_hash = key_hash;
  n.size_bytes = size_bytes;
  // Back soon after probation let it go: it has shown it is reused.
  n.queue = ghosts_.Contains(key_hash) ? kMain : kProbation;
  nodes_.PushMru(List(n.queue), slot);
  index_.Insert(id, slot);
}

void ProbationPolicy::OnAccess(ObjectId id) {
  uint32_t slot = index_.Find(id);
  if (slot == kNoSlot) return;  // not complete yet, or already gone
  Node& n = nodes_[slot];
  nodes_.Unlink(List(n.queue), slot);
  n.queue = kMain;  // a second use ends probation
  nodes_.PushMru(main_, slot);
}

void ProbationPolicy::OnRemove(ObjectId id) {
  uint32_t slot = index_.Find(id);
  if (slot != kNoSlot) Drop(slot);
}

void ProbationPolicy::Drop(uint32_t slot) {
  Node& n = nodes_[slot];
  nodes_.Unlink(List(n.queue), slot);
  bool erased = index_.Erase(n.id);
  assert(erased);
  (void)erased;
  nodes_.Free(slot);
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

std::optional<ObjectId> ProbationPolicy::NextVictim(
    const std::function<bool(ObjectId)>& evictable) {
  const bool probation_first =
      double(probation_.count) > kProbationShare * double(index_.size());
  const eviction::NodeList& first = probation_first ? probation_ : main_;
  const eviction::NodeList& second = probation_first ? main_ : probation_;
  // Bounded walks first; past the bound only when both queues' least
  // recent objects are all leased or pinned.
  for (size_t bound : {kMaxSkipsPerQueue, SIZE_MAX}) {
    uint32_t slot = FindEvictable(first, evictable, bound);
    if (slot == kNoSlot) slot = FindEvictable(second, evictable, bound);
    if (slot == kNoSlot) continue;
    const Node n = nodes_[slot];
    Drop(slot);
    if (n.queue == kProbation) {
      SizeGhosts();
      ghosts_.Add(n.key_hash);
    }
    ++stats_.victims;
    return n.id;
  }
  return std::nullopt;
}

size_t ProbationPolicy::memory_bytes() const {
  return nodes_.memory_bytes() + index_.memory_bytes() + ghosts_.memory_bytes();
}

}  // namespace mc::master

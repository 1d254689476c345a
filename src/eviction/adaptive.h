// AdaptivePolicy ("adaptive", the default): ARC (Megiddo & Modha) adapted to
// variable object sizes and to the master's seam.
//
// Live objects sit in T1 (seen once since they entered) or T2 (hit again);
// evicted keys leave a ghost, by key hash, in B1 or B2. A re-put of a key whose
// ghost is in B1 means recency deserved more room: the target size of T1 (p,
// in bytes) grows; a ghost hit in B2 shrinks it. Victims come from the LRU end
// of T1 while T1 is above p, else from T2; objects the predicate rejects are
// skipped and stay where they are. The cache size c the policy adapts against
// is the live byte count when the master last began a round of victims (it
// asks when full, or above the high watermark). Ghost history is bounded by
// ARC's own rules (T1+B1 <= c, ghosts <= c in bytes) and by
// `ghost_limit_objects()`.
//
// ARC cannot act like LRU, and LRU wins on some recency-friendly workloads
// (long multi-turn chats on a large cache). So a PolicyDuel replays the keys
// (a sample of them, in a large cache) through shadow LRU and ARC caches,
// and while the LRU shadow is ahead victims come from the least recent end
// of one recency order over T1 and T2 (ghosts and p keep being maintained,
// so switching back is free).
//
// O(1) per insert/access/remove; a victim costs O(objects skipped). A live
// object costs 17 bytes when the master answers its facts (UseFacts: its
// id, key hash and size are the master's, not copied), 41 otherwise (plus
// ~16-24 of index unless the ids are the master's slotted ones), ~24+16 per
// ghost. Not thread-safe.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "eviction/duel.h"
#include "eviction/policy.h"
#include "eviction/table.h"

namespace mc::master {

class AdaptivePolicy final : public ShadowablePolicy {
 public:
  // Ghosts are at most `capacity_hint_objects`, or, if it is 0, at most the
  // high-water mark of tracked objects (and never fewer than this floor, so a
  // cold cache can still learn).
  static constexpr size_t kMinGhostLimitObjects = 1024;

  // `duel` off gives plain ARC (the shadow inside a PolicyDuel is one).
  explicit AdaptivePolicy(size_t capacity_hint_objects, bool duel = true,
                          IdSpace ids = IdSpace::kAny);
  ~AdaptivePolicy() override;
  // Not copied: facts_ may point at the policy's own copies.
  AdaptivePolicy(const AdaptivePolicy&) = delete;
  AdaptivePolicy& operator=(const AdaptivePolicy&) = delete;

  void OnInsert(ObjectId id, uint64_t key_hash, uint64_t size_bytes) override;
  void Reserve(size_t objects) override {
    live_.Reserve(objects);
    live_list_.reserve(objects);
  }
  void PrefaultReserved(Prefaulter& prefaulter) const override;
  void OnAccess(ObjectId id) override;
  void OnRemove(ObjectId id) override;
  // A miss on a ghost adapts p at once, as a re-put would (but only once:
  // the ghost stays, flagged, so a later re-put still lands in T2).
  void OnMiss(uint64_t key_hash) override;
  std::optional<ObjectId> NextVictim(
      const std::function<bool(ObjectId)>& evictable) override;
  std::string_view name() const override { return "adaptive"; }
  size_t tracked() const override { return live_count_; }
  EvictionStats stats() const override { return stats_; }

  // Reads live objects' facts from `facts` (kSlotted ids only; before the
  // first insert) instead of keeping copies.
  void UseFacts(const ObjectFacts* facts) override;

  bool Tracks(ObjectId id) const override { return FindLive(id) != eviction::kNoSlot; }
  // True while the duel says plain recency is winning.
  bool evicting_by_recency() const { return duel_ && duel_->prefer_recency(); }
  size_t ghosts() const { return ghost_index_.size(); }
  size_t ghost_limit_objects() const;
  // T1's target size in bytes, for tests and metrics.
  uint64_t target_recent_bytes() const { return target_t1_bytes_; }
  // Heap bytes held by the policy (for the per-object memory budget).
  size_t memory_bytes() const override;

 private:
  enum ListId : uint8_t { kT1, kT2, kB1, kB2, kNoList = 0xff };
  // Sizes are capped so a ghost keeps its list id in the size's word.
  static constexpr uint64_t kMaxNodeBytes = (1ull << 56) - 1;
  // A live node is its links only: the object's id, key hash and size come
  // from ObjectFacts (the master's, or own_), its list from live_list_. This
  // is the policy's whole share of the master's per-object memory budget.
  struct LiveNode {
    uint32_t prev = eviction::kNoSlot;
    uint32_t next = eviction::kNoSlot;
    uint32_t older = eviction::kNoSlot;  // recency order over T1 and T2
    uint32_t newer = eviction::kNoSlot;
  };
  // The facts of each live node, by node slot, when the caller gives none.
  class OwnFacts final : public ObjectFacts {
   public:
    ObjectId IdAt(uint32_t slot) const override { return copies_[slot].id; }
    uint64_t KeyHashAt(uint32_t slot) const override { return copies_[slot].key_hash; }
    uint64_t SizeAt(uint32_t slot) const override { return copies_[slot].size_bytes; }
    void Set(uint32_t slot, ObjectId id, uint64_t key_hash, uint64_t size_bytes) {
      if (slot >= copies_.size()) copies_.resize(size_t{slot} + 1);
      copies_[slot] = {id, key_hash, size_bytes};
    }
    size_t memory_bytes() const { return copies_.capacity() * sizeof(Copy); }

   private:
    struct Copy {
      ObjectId id;
      uint64_t key_hash;
      uint64_t size_bytes;
    };
    std::vector<Copy> copies_;
  };
  struct GhostNode {
    uint64_t key_hash = 0;
    uint64_t size_bytes : 56 = 0;
    uint64_t list : 7 = kB1;  // a ListId
    uint64_t adapted : 1 = 0;  // a miss already moved p for this ghost
    uint32_t prev = eviction::kNoSlot;
    uint32_t next = eviction::kNoSlot;
  };
  static_assert(sizeof(LiveNode) == 16 && sizeof(GhostNode) == 24);

  uint32_t FindLive(ObjectId id) const;
  // A node for `id` (absent) on no list yet, its facts recorded unless the
  // caller keeps them.
  uint32_t AddLive(ObjectId id, uint64_t key_hash, uint64_t size_bytes, ListId list);
  // Frees a live node, unlinked from every list first.
  void RemoveLive(uint32_t slot);
  uint64_t SizeOf(uint32_t slot) const {
    return std::min(facts_->SizeAt(slot), kMaxNodeBytes);
  }
  // Moves a live node to the most recent end of `list`.
  void PushLive(ListId list, uint32_t slot) {
    live_list_[slot] = list;
    live_.PushMru(Live(list), slot, SizeOf(slot));
  }
  void UnlinkLive(uint32_t slot) { live_.Unlink(Live(live_list_[slot]), slot, SizeOf(slot)); }

  eviction::NodeList& Live(uint64_t l) { return l == kT1 ? t1_ : t2_; }
  eviction::NodeList& Ghost(uint64_t l) { return l == kB1 ? b1_ : b2_; }
  // Returns the live list a re-put key goes to, adapting p on a ghost hit.
  ListId ConsumeGhost(uint64_t key_hash, uint64_t size_bytes);
  // ARC's adaptation of p for a hit on a ghost of `list` (B1 or B2).
  void AdaptTarget(ListId list, uint64_t size_bytes);
  uint32_t FindEvictable(const eviction::NodeList& list,
                         const std::function<bool(ObjectId)>& evictable) const;
  void AddGhost(uint64_t key_hash, uint64_t size_bytes, ListId list);
  void DropGhost(ListId list);
  void TrimGhosts();
  void LinkNewest(uint32_t slot);
  void UnlinkRecency(uint32_t slot);
  uint32_t FindEvictableByRecency(const std::function<bool(ObjectId)>& evictable) const;

  size_t capacity_hint_objects_;
  size_t tracked_high_water_ = 0;
  uint64_t cache_bytes_ = 0;        // c: live bytes when a round of victims last began
  size_t cache_objects_ = 0;        // live objects then
  bool in_round_ = false;           // no insert since the last victim
  bool last_by_recency_ = false;    // the mode of the last victim
  EvictionStats stats_;
  uint64_t target_t1_bytes_ = 0;    // p
  eviction::NodeList t1_, t2_, b1_, b2_;
  uint32_t oldest_ = eviction::kNoSlot;
  uint32_t newest_ = eviction::kNoSlot;
  std::unique_ptr<PolicyDuel> duel_;
  bool slotted_;                      // ids are kSlotted: a node sits at its slot
  OwnFacts own_;
  const ObjectFacts* facts_ = &own_;
  eviction::NodePool<LiveNode> live_;
  std::vector<uint8_t> live_list_;    // by node slot: its ListId, kNoList if free
  eviction::SlotIndex live_index_;    // !slotted_: id -> node slot
  size_t live_count_ = 0;
  eviction::NodePool<GhostNode> ghost_;
  eviction::SlotIndex ghost_index_;  // key hash -> ghost slot
};

}  // namespace mc::master

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
// O(1) per insert/access/remove; a victim costs O(objects skipped). About 40
// bytes per live object (plus ~16-24 of index unless the ids are the
// master's slotted ones), ~24+16 per ghost. Not thread-safe.
#pragma once

#include <memory>

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

  void OnInsert(ObjectId id, uint64_t key_hash, uint64_t size_bytes) override;
  void OnAccess(ObjectId id) override;
  void OnRemove(ObjectId id) override;
  // A miss on a ghost adapts p at once, as a re-put would (but only once:
  // the ghost stays, flagged, so a later re-put still lands in T2).
  void OnMiss(uint64_t key_hash) override;
  std::optional<ObjectId> NextVictim(
      const std::function<bool(ObjectId)>& evictable) override;
  std::string_view name() const override { return "adaptive"; }
  size_t tracked() const override { return live_.size(); }
  EvictionStats stats() const override { return stats_; }

  bool Tracks(ObjectId id) const override { return live_.Find(id) != eviction::kNoSlot; }
  // True while the duel says plain recency is winning.
  bool evicting_by_recency() const { return duel_ && duel_->prefer_recency(); }
  size_t ghosts() const { return ghost_index_.size(); }
  size_t ghost_limit_objects() const;
  // T1's target size in bytes, for tests and metrics.
  uint64_t target_recent_bytes() const { return target_t1_bytes_; }
  // Heap bytes held by the policy (for the per-object memory budget).
  size_t memory_bytes() const override;

 private:
  enum ListId : uint8_t { kT1, kT2, kB1, kB2 };
  // The list id shares a word with the size (objects are far below 2^56
  // bytes) so a live node is 40 bytes and a ghost 24: this is most of the
  // policy's share of the master's per-object memory budget.
  static constexpr uint64_t kMaxNodeBytes = (1ull << 56) - 1;
  struct LiveNode {
    ObjectId id = 0;
    uint64_t key_hash = 0;
    uint64_t size_bytes : 56 = 0;
    uint64_t list : 8 = kT1;  // a ListId
    uint32_t prev = eviction::kNoSlot;
    uint32_t next = eviction::kNoSlot;
    uint32_t older = eviction::kNoSlot;  // recency order over T1 and T2
    uint32_t newer = eviction::kNoSlot;
  };
  struct GhostNode {
    uint64_t key_hash = 0;
    uint64_t size_bytes : 56 = 0;
    uint64_t list : 7 = kB1;  // a ListId
    uint64_t adapted : 1 = 0;  // a miss already moved p for this ghost
    uint32_t prev = eviction::kNoSlot;
    uint32_t next = eviction::kNoSlot;
  };
  static_assert(sizeof(LiveNode) == 40 && sizeof(GhostNode) == 24);

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
  eviction::TrackedNodes<LiveNode> live_;  // by id
  eviction::NodePool<GhostNode> ghost_;
  eviction::SlotIndex ghost_index_;  // key hash -> ghost slot
};

}  // namespace mc::master

// ProbationPolicy ("probation"): new objects serve a probation in a small
// queue; only objects read again, or put back soon after being evicted
// from probation, reach the main queue (2Q, Johnson & Shasha, and S3-FIFO,
// Yang et al., with LRU order inside each queue).
//
// Why: in KV-cache traces most blocks are one-hit wonders (in the shared
// trace 58% of distinct blocks are used once), and a block used twice is
// about twice as likely to be used again as a new one. LRU and ARC let a
// long one-off chain push out the blocks that are read over and over;
// here it can only take probation's share of the pool. A block evicted from
// probation leaves a ghost (its key hash), so a chain that comes back after
// a long gap goes straight to the main queue. A prefix chain's head is read
// at least as often as its tail, and the master touches a batch tail first,
// so within each queue a chain loses its tail before its head.
//
// Victims come from probation's least recent end while probation holds more
// than kProbationShare of the objects (or main has nothing evictable), else
// from main's. A victim costs O(objects skipped because `evictable` rejected
// them), at most kMaxSkipsPerQueue per queue before the walk goes on past
// them only if no queue offered one. O(1) per insert/access/remove. About 48
// bytes per live object (node and index) plus about 3 for the ghosts (a
// GhostFilter remembering kGhostsPerObject keys per tracked object, one to
// two generations of kGhostsPerObject / 2 each). Not thread-safe.
#pragma once

#include "eviction/ghost_filter.h"
#include "eviction/policy.h"
#include "eviction/table.h"

namespace mc::master {

class ProbationPolicy final : public EvictionPolicy {
 public:
  static constexpr double kProbationShare = 0.10;
  static constexpr size_t kGhostsPerObject = 2;
  // Ghosts kept however few objects are tracked, so a cold pool learns.
  static constexpr size_t kMinGhosts = 1024;
  static constexpr size_t kMaxSkipsPerQueue = 16;

  explicit ProbationPolicy(size_t capacity_hint_objects, IdSpace ids = IdSpace::kAny);

  void OnInsert(ObjectId id, uint64_t key_hash, uint64_t size_bytes) override;
  void OnAccess(ObjectId id) override;
  void OnRemove(ObjectId id) override;
  std::optional<ObjectId> NextVictim(
      const std::function<bool(ObjectId)>& evictable) override;
  std::string_view name() const override { return "probation"; }
  size_t tracked() const override { return index_.size(); }
  EvictionStats stats() const override { return stats_; }

  // True while `id` is tracked and still on probation.
  bool OnProbation(ObjectId id) const;
  // Whether a key evicted from probation is still remembered.
  bool IsGhost(uint64_t key_hash) const { return ghosts_.Contains(key_hash); }
  // Keys remembered per generation (ghosts live one to two generations).
  size_t ghost_generation() const { return ghosts_.entries(); }
  size_t memory_bytes() const;

 private:
  enum Queue : uint8_t { kProbation, kMain };
  struct Node {
    ObjectId id = 0;
    uint64_t key_hash = 0;
    uint64_t size_bytes = 0;  // NodeList keeps byte totals
    uint32_t prev = eviction::kNoSlot;
    uint32_t next = eviction::kNoSlot;
    Queue queue = kProbation;
  };

  eviction::NodeList& List(Queue q) { return q == kProbation ? probation_ : main_; }
  uint32_t FindEvictable(const eviction::NodeList& list,
                         const std::function<bool(ObjectId)>& evictable, size_t max_steps);
  void Drop(uint32_t slot);
  void SizeGhosts();

  eviction::NodeList probation_, main_;
  eviction::NodePool<Node> nodes_;
  eviction::IdIndex index_;  // id -> node slot
  eviction::GhostFilter ghosts_;
  size_t capacity_hint_objects_;
  EvictionStats stats_;
};

}  // namespace mc::master

// ProbationPolicy ("probation", chosen with --eviction-policy probation): new objects serve a
// probation in a small queue; only objects read again, or put back soon
// after being evicted from probation, reach the main queue (2Q, Johnson &
// Shasha, and S3-FIFO, Yang et al., with LRU order inside each queue).
//
// Why: in KV-cache traces most blocks are one-hit wonders (in the shared
// trace 58% of distinct blocks are used once), and a block used twice is
// about twice as likely to be used again as a new one. LRU and ARC let a
// long one-off chain push out the blocks that are read over and over;
// here it can only take probation's share of the pool. Every victim leaves a
// ghost (its key hash, in a GhostFilter), so a chain that comes back after a
// long gap goes straight to the main queue; a block main let go counts too
// (on the shared trace a block used twice is read again in 84% of cases,
// often after longer than the pool holds it: at 2048-16384 blocks this,
// with 3 ghosts an object instead of 2, closes 0.1-3.7 points more of the
// LRU-to-Belady gap than ghosts of probation's victims alone). A prefix
// chain's head is read at least as often as its tail, and the master touches
// a batch last key first, so within each queue a chain loses its tail first.
//
// Victims come from probation's least recent end while probation holds more
// than kProbationShare of the objects (or main has nothing evictable), else
// from main's. On a large cache holding nearly all that is reused, a tenth
// is too short a probation for blocks whose next use is far off, and plain
// LRU wins; so, as in the adaptive policy, a PolicyDuel replays the keys
// (a sample on a large cache) through shadow LRU and probation caches, and
// while LRU is ahead the victim is the least recent of the two queues' ends.
//
// A victim costs O(objects skipped because `evictable` rejected them), at
// most kMaxSkipsPerQueue per queue before the walk goes on past them only
// if no queue offered one, plus the duel's shadow updates (amortized O(1)).
// O(1) per insert/access/remove. 40 bytes of node per live object (and
// 16-32 of index unless the ids are the master's slotted ones), about 4 for the ghosts (kGhostsPerObject keys per object,
// one to two generations of half that each), and the duel's shadows
// (2-4 MB up to about 2 million objects, then about 2 bytes an object).
// Not thread-safe.
#pragma once

#include <memory>

#include "eviction/duel.h"
#include "eviction/ghost_filter.h"
#include "eviction/policy.h"
#include "eviction/table.h"

namespace mc::master {

class ProbationPolicy final : public ShadowablePolicy {
 public:
  static constexpr double kProbationShare = 0.10;
  static constexpr size_t kGhostsPerObject = 3;
  // Ghosts kept however few objects are tracked, so a cold pool learns.
  static constexpr size_t kMinGhosts = 1024;
  static constexpr size_t kMaxSkipsPerQueue = 16;

  // `duel` off gives the plain queues (the shadow inside a PolicyDuel).
  explicit ProbationPolicy(size_t capacity_hint_objects, IdSpace ids = IdSpace::kAny,
                           bool duel = true);
  ~ProbationPolicy() override;

  void OnInsert(ObjectId id, uint64_t key_hash, uint64_t size_bytes) override;
  void OnAccess(ObjectId id) override;
  void OnRemove(ObjectId id) override;
  void OnMiss(uint64_t key_hash) override;
  std::optional<ObjectId> NextVictim(
      const std::function<bool(ObjectId)>& evictable) override;
  std::string_view name() const override { return "probation"; }
  size_t tracked() const override { return nodes_.size(); }
  EvictionStats stats() const override { return stats_; }
  bool Tracks(ObjectId id) const override { return nodes_.Find(id) != eviction::kNoSlot; }
  size_t memory_bytes() const override;

  // True while `id` is tracked and still on probation.
  bool OnProbation(ObjectId id) const;
  // Whether a key evicted from probation is still remembered.
  bool IsGhost(uint64_t key_hash) const { return ghosts_.Contains(key_hash); }
  // Keys remembered per generation (ghosts live one to two generations).
  size_t ghost_generation() const { return ghosts_.entries(); }
  // True while the duel says plain recency is winning.
  bool evicting_by_recency() const { return duel_ && duel_->prefer_recency(); }

 private:
  enum Queue : uint8_t { kProbation, kMain };
  // The queue shares a word with the size (objects are far below 2^56
  // bytes), so a node is 40 bytes.
  static constexpr uint64_t kMaxNodeBytes = (1ull << 56) - 1;
  struct Node {
    ObjectId id = 0;
    uint64_t key_hash = 0;
    uint64_t size_bytes : 56 = 0;  // NodeList keeps byte totals
    uint64_t queue : 8 = kProbation;
    uint64_t last_tick = 0;        // clock_ at its insert or last access
    uint32_t prev = eviction::kNoSlot;
    uint32_t next = eviction::kNoSlot;
  };
  static_assert(sizeof(Node) == 40);

  eviction::NodeList& List(uint64_t q) { return q == kProbation ? probation_ : main_; }
  uint32_t FindEvictable(const eviction::NodeList& list,
                         const std::function<bool(ObjectId)>& evictable, size_t max_steps);
  uint32_t PickVictim(const std::function<bool(ObjectId)>& evictable, size_t max_steps,
                      bool by_recency);
  void Drop(uint32_t slot);
  void SizeGhosts();

  eviction::NodeList probation_, main_;
  eviction::TrackedNodes<Node> nodes_;  // by id
  eviction::GhostFilter ghosts_;
  std::unique_ptr<PolicyDuel> duel_;
  size_t capacity_hint_objects_;
  size_t tracked_high_water_ = 0;
  bool in_round_ = false;         // no insert since the last victim
  bool last_by_recency_ = false;  // the mode of the last victim
  uint64_t clock_ = 0;            // inserts and accesses so far
  EvictionStats stats_;
};

}  // namespace mc::master

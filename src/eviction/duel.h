// PolicyDuel: decides whether a policy should evict by its own rule (the
// challenger: ARC's lists for the adaptive policy, the queues of the
// probation policy) or by plain recency, by replaying the keys through two
// shadow caches, an exact LRU and the challenger, and keeping a saturating
// score of which one hits more (set dueling, as in adaptive CPU caches).
// The challengers beat LRU on most prefix-cache workloads but lose on some
// recency-friendly ones (long multi-turn chats on a large cache); the duel
// lets the policy follow whichever wins.
//
// Small caches are replayed whole; a large one through a sample of keys
// (chosen by key hash) with the capacity scaled alike, 1 key in 2, 4, ... or
// at most 64, so that the shadows never hold fewer than kShadowObjects. A
// sample of a few hundred keys is noise: which keys it happens to take
// decides the winner, and the policy flips between the two modes, which
// loses to both; 16384 and more are not (1 in 64 of 10 million objects is
// 156,000 keys).
// The score saturates at one shadow capacity of net hits, so a lasting change
// of workload turns it within about a cache's worth of references.
// Shadows hold key hashes only, about 115 bytes per shadow object (more once
// the challenger's shadow has ghosts): 2-4 MB from 32768 real objects up to about 2
// million, then about 2 bytes per real object (a sample of at most 1 in 8 cost
// 14, a tenth of the master's whole budget at 10 million). Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "eviction/policy.h"
#include "eviction/table.h"

namespace mc::master {

// A policy a duel can replay as its challenger: the seam, plus whether it
// holds an object (the shadow's ids are key hashes).
class ShadowablePolicy : public EvictionPolicy {
 public:
  virtual bool Tracks(ObjectId id) const = 0;
  size_t memory_bytes() const override = 0;
};

class PolicyDuel {
 public:
  static constexpr unsigned kMaxSampleShift = 6;     // at most 1 key in 64
  static constexpr size_t kShadowObjects = 16384;    // sample only above this
  static constexpr size_t kMinShadowObjects = 16;
  static constexpr int32_t kMinScoreLimit = 256;     // saturating counter bound

  // ARC (the adaptive policy without a duel) as the challenger.
  PolicyDuel();
  // `make_challenger` builds the challenger's shadow (without a duel of its
  // own), again each time the sample changes.
  explicit PolicyDuel(std::function<std::unique_ptr<ShadowablePolicy>()> make_challenger);
  ~PolicyDuel();

  // Every reference the cache sees (a hit, or an insert after a miss).
  void OnReference(uint64_t key_hash);
  // A read of a key the real cache does not hold: each shadow that holds it
  // scores a hit (and refreshes it); neither inserts it, as the real cache
  // does not. This is how the duel learns that a policy evicted keys that
  // were still wanted even when nobody puts them back.
  void OnMiss(uint64_t key_hash);
  // A removal the policy did not choose.
  void OnRemove(uint64_t key_hash);
  // The real cache's size in objects, learnt when it is full.
  void SetCapacity(size_t cache_objects);
  // The most objects the real cache has held so far: once it is large enough,
  // the duel samples keys (the sample only ever gets sparser; the shadows
  // start over then, the score is kept).
  void SetTrackedHighWater(size_t objects);
  unsigned sample_shift() const { return shift_; }
  size_t shadow_capacity() const { return capacity_objects_; }
  // A tie goes to recency: exact LRU is the bar the policy must never fall
  // below, so the challenger has to earn the lead (measured with trace_sim over the
  // shared trace and 48 synthetic ones: fewer cases below LRU, same gains).
  bool prefer_recency() const { return score_ >= 0; }
  int32_t score() const { return score_; }
  size_t memory_bytes() const;

 private:
  struct LruNode {
    uint64_t key_hash = 0;
    uint64_t size_bytes = 1;
    uint32_t prev = eviction::kNoSlot;
    uint32_t next = eviction::kNoSlot;
  };
  bool Sampled(uint64_t key_hash) const {
    return (eviction::MixBits(key_hash ^ 0x5eed) & ((1u << shift_) - 1)) == 0;
  }
  bool LruReference(uint64_t key_hash);
  bool ChallengerReference(uint64_t key_hash);

  unsigned shift_ = 0;                  // sample 1 key in 2^shift_
  size_t cache_objects_ = SIZE_MAX;     // the real cache's, once it has filled
  size_t capacity_objects_ = SIZE_MAX;  // the shadows': unbounded until then
  int32_t score_limit_ = kMinScoreLimit;
  int32_t score_ = 0;                   // > 0: LRU shadow has been hitting more
  eviction::NodeList lru_list_;
  eviction::NodePool<LruNode> lru_nodes_;
  eviction::SlotIndex lru_index_;
  std::function<std::unique_ptr<ShadowablePolicy>()> make_challenger_;
  std::unique_ptr<ShadowablePolicy> challenger_;  // ids are the key hashes
};

}  // namespace mc::master

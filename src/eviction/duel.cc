#include "eviction/duel.h"

#include <algorithm>

#include "eviction/adaptive.h"

namespace mc::master {

PolicyDuel::PolicyDuel()
    : PolicyDuel([] { return std::make_unique<AdaptivePolicy>(0, /*duel=*/false); }) {}

PolicyDuel::PolicyDuel(std::function<std::unique_ptr<ShadowablePolicy>()> make_challenger)
    : make_challenger_(std::move(make_challenger)), challenger_(make_challenger_()) {}
PolicyDuel::~PolicyDuel() = default;

void PolicyDuel::SetCapacity(size_t cache_objects) {
  cache_objects_ = cache_objects;
  capacity_objects_ = std::max(kMinShadowObjects, cache_objects >> shift_);
  score_limit_ = static_cast<int32_t>(
      std::clamp<size_t>(capacity_objects_, kMinScoreLimit, INT32_MAX / 2));
  score_ = std::clamp(score_, -score_limit_, score_limit_);
}

void PolicyDuel::SetTrackedHighWater(size_t objects) {
  unsigned shift = shift_;
  while (shift < kMaxSampleShift && (objects >> (shift + 1)) >= kShadowObjects) ++shift;
  if (shift == shift_) return;
  // The shadows hold keys the sparser sample no longer sees; they would sit
  // there as dead weight, so both start over, alike, from empty.
  shift_ = shift;
  lru_index_ = {};
  lru_nodes_ = {};
  lru_list_ = {};
  challenger_ = make_challenger_();
  if (cache_objects_ != SIZE_MAX) SetCapacity(cache_objects_);
}

void PolicyDuel::OnReference(uint64_t key_hash) {
  if (!Sampled(key_hash)) return;
  int lru_hit = LruReference(key_hash) ? 1 : 0;
  int challenger_hit = ChallengerReference(key_hash) ? 1 : 0;
  score_ = std::clamp(score_ + lru_hit - challenger_hit, -score_limit_, score_limit_);
}

bool PolicyDuel::LruReference(uint64_t key_hash) {
  uint32_t slot = lru_index_.Find(key_hash);
  if (slot != eviction::kNoSlot) {
    lru_nodes_.Unlink(lru_list_, slot);
    lru_nodes_.PushMru(lru_list_, slot);
    return true;
  }
  while (lru_list_.count > 0 && lru_list_.count >= capacity_objects_) {
    uint32_t victim = lru_list_.lru;
    lru_index_.Erase(lru_nodes_[victim].key_hash);
    lru_nodes_.Unlink(lru_list_, victim);
    lru_nodes_.Free(victim);
  }
  slot = lru_nodes_.Allocate();
  lru_nodes_[slot].key_hash = key_hash;
  lru_nodes_.PushMru(lru_list_, slot);
  lru_index_.Insert(key_hash, slot);
  return false;
}

bool PolicyDuel::ChallengerReference(uint64_t key_hash) {
  if (challenger_->Tracks(key_hash)) {
    challenger_->OnAccess(key_hash);
    return true;
  }
  while (challenger_->tracked() > 0 && challenger_->tracked() >= capacity_objects_) {
    challenger_->NextVictim([](ObjectId) { return true; });
  }
  challenger_->OnInsert(key_hash, key_hash, 1);
  return false;
}

void PolicyDuel::OnMiss(uint64_t key_hash) {
  if (!Sampled(key_hash)) return;
  int lru_hit = 0;
  uint32_t slot = lru_index_.Find(key_hash);
  if (slot != eviction::kNoSlot) {
    lru_nodes_.Unlink(lru_list_, slot);
    lru_nodes_.PushMru(lru_list_, slot);
    lru_hit = 1;
  }
  int challenger_hit = 0;
  if (challenger_->Tracks(key_hash)) {
    challenger_->OnAccess(key_hash);
    challenger_hit = 1;
  }
  score_ = std::clamp(score_ + lru_hit - challenger_hit, -score_limit_, score_limit_);
}

void PolicyDuel::OnRemove(uint64_t key_hash) {
  if (!Sampled(key_hash)) return;
  uint32_t slot = lru_index_.Find(key_hash);
  if (slot != eviction::kNoSlot) {
    lru_index_.Erase(key_hash);
    lru_nodes_.Unlink(lru_list_, slot);
    lru_nodes_.Free(slot);
  }
  challenger_->OnRemove(key_hash);
}

size_t PolicyDuel::memory_bytes() const {
  return lru_nodes_.memory_bytes() + lru_index_.memory_bytes() + challenger_->memory_bytes();
}

}  // namespace mc::master

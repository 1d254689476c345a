// MasterService's disk-tier operations and the hooks the others call
// (TierService does the work; see tier_service.h).
#include "masterd/service.h"

#include <algorithm>
#include <functional>

#include "common/log.h"
#include "masterd/journal.h"
#include "masterd/tier_service.h"

namespace mc::masterd {

namespace {
Status NoTier() {
  return Error(ErrorCode::NOT_SUPPORTED,
               "this master runs without --enable-offload: disk tiers are not used");
}

// The state's listener with a disk tier: the journal's or the HA log's (or
// none) behind a tap that counts the objects evicted from memory with no
// disk copy (lost, where the tier should have kept them), and that hands
// the disk records pending over first (`flush`): a record that an object
// reached the disk precedes the one that drops its memory copy, so no
// crash between the two loses it.
class EvictionTap final : public master::StateListener {
 public:
  EvictionTap(master::StateListener* inner, const std::unique_ptr<TierService>& tier,
              std::function<void()> flush)
      : inner_(inner), tier_(tier), flush_(std::move(flush)) {}
  void OnSegmentMounted(const master::SegmentDump& s) override {
    if (Flushed()) inner_->OnSegmentMounted(s);
  }
  void OnSegmentUnmounted(std::string_view name) override {
    if (Flushed()) inner_->OnSegmentUnmounted(name);
  }
  uint64_t OnObjectCommitted(const master::ObjectDump& o) override {
    return Flushed() ? inner_->OnObjectCommitted(o) : 0;
  }
  void OnObjectRemoved(std::string_view key, uint64_t tag, master::RemoveReason why) override {
    if (why == master::RemoveReason::kEvicted && tier_) tier_->OnEvicted(key);
    if (Flushed()) inner_->OnObjectRemoved(key, tag, why);
  }

 private:
  bool Flushed() {
    if (inner_ == nullptr) return false;
    if (tier_) flush_();
    return true;
  }
  master::StateListener* inner_;
  const std::unique_ptr<TierService>& tier_;  // the service's, set after the state
  std::function<void()> flush_;
};
}  // namespace

master::StateListener* MasterService::TierTap(const MasterConfig& config,
                                              master::StateListener* listener) {
  if (!config.enable_offload && !config.offload_on_evict) return listener;
  tier_tap_ = std::make_unique<EvictionTap>(listener, tier_, [this] { FlushTierRecords(); });
  return tier_tap_.get();
}

Result<msg::TierAnnounceReply> MasterService::TierAnnounce(const msg::TierAnnounceRequest& req) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!tier_) return NoTier();
  auto r = tier_->Announce(req);
  FlushTierChanges();
  return r;
}

Result<msg::TierFetchReply> MasterService::TierFetch(const msg::TierFetchRequest& req) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!tier_) return NoTier();
  auto r = tier_->Fetch(*state_, req, clock_.NowUs());
  tier_->CountPoll();
  FlushTierChanges();
  return r;
}

Result<msg::TierFetchReply> MasterService::TierPoll(const msg::TierPollRequest& req) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!tier_) return NoTier();
  auto r = tier_->Fetch(*state_, req.fetch, clock_.NowUs());
  // Only a call that reported nothing parks: one called again must not
  // apply results twice (rpc/parking.h).
  if (r.ok() && r->work.empty() && req.fetch.results.empty()) {
    const uint64_t wait_us = uint64_t{std::min(req.max_wait_ms, msg::kMaxTierPollWaitMs)} * 1000;
    const rpc::ParkAnswer a = rpc::ParkCall(wait_us);
    if (a == rpc::ParkAnswer::kParked) return r;  // the server drops it and calls again
    if (a == rpc::ParkAnswer::kDue) r->wait_ms = 0;  // it waited here: ask again at once
  }
  tier_->CountPoll();
  FlushTierChanges();
  return r;
}

Result<msg::TieredListKeysReply> MasterService::ListKeysTiered(const msg::ListKeysRequest& req) {
  std::lock_guard<std::mutex> lock(mu_);
  MC_ASSIGN_OR_RETURN(msg::ListKeysReply memory, state_->ListKeys(req, clock_.NowUs()));
  msg::TieredListKeysReply r;
  if (!tier_) {
    r.tiers.assign(memory.keys.size(), static_cast<uint8_t>(msg::KeyTier::kMemory));
    r.list = std::move(memory);
    return r;
  }
  r.list = tier_->disks().MergeKeys(memory, req, std::min(req.limit, config_.max_batch), &r.tiers);
  return r;
}

bool MasterService::TierHolds(uint64_t need_bytes, uint64_t now_us) {
  if (!tier_) return false;
  const bool short_of_room = tier_->OffloadAhead(*state_, need_bytes, now_us);
  FlushTierChanges();
  if (!short_of_room || rpc::ParkCall(TierService::kMaxPutHoldUs) != rpc::ParkAnswer::kParked)
    return false;
  tier_->CountHeldPut();
  return true;
}

uint64_t MasterService::TierStageBytes(const msg::Batch<msg::KeyRequest>& reqs) const {
  if (!tier_) return 0;
  uint64_t bytes = 0;
  for (const msg::KeyRequest& r : reqs) bytes += tier_->StageBytes(*state_, r.key);
  return bytes;
}

Status MasterService::TierReadMiss(const std::string& key, const Status& missed, uint64_t now_us) {
  if (!tier_) return missed;
  Status st = tier_->OnReadMiss(*state_, key, missed, now_us);
  FlushTierChanges();
  return st;
}

void MasterService::TierReadHit(const std::string& key) {
  if (tier_) tier_->OnReadHit(key);
}

bool MasterService::TierHas(const std::string& key) const { return tier_ && tier_->OnDisk(key); }

bool MasterService::TierForget(const std::string& key) {
  if (!tier_ || !tier_->Forget(key)) return false;
  FlushTierChanges();
  return true;
}

uint64_t MasterService::TierForgetAll() {
  if (!tier_) return 0;
  const uint64_t n = tier_->ForgetAll();
  FlushTierChanges();
  return n;
}

void MasterService::TierTick(uint64_t now_us) {
  if (!tier_) return;
  tier_->Tick(*state_, now_us);
  FlushTierChanges();
}

void MasterService::FlushTierChanges() {
  if (tier_->TakeWake()) parking_.Wake();
  FlushTierRecords();
}

void MasterService::FlushTierRecords() {
  for (const TierService::Change& c : tier_->TakeChanges()) {
    if (tier_journal_ == nullptr) continue;
    if (c.disk_id.empty()) {
      tier_journal_->OnDiskReplicaRemoved(c.key);
    } else {
      tier_journal_->OnDiskReplica(c.key, c.disk_id, c.size_bytes);
    }
  }
}

Status MasterService::LoadTier(Journal* journal) {
  if (journal == nullptr) return Status::Ok();
  return LoadTier(
      journal, [journal](const DiskReplicaVisitor& visit) { return journal->LoadDiskReplicas(visit); },
      journal->path());
}

Status MasterService::LoadTier(DiskReplicaListener* records, const DiskReplicaLoader& load,
                               const std::string& source) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!tier_ || records == nullptr) return Status::Ok();
  tier_journal_ = records;
  uint64_t n = 0;
  MC_RETURN_IF_ERROR(load([&](const std::string& key, const std::string& disk_id,
                              uint64_t size_bytes) {
    tier_->Load(key, disk_id, size_bytes);
    ++n;
  }));
  MC_LOG(INFO) << "disk tier: " << n << " disk replicas loaded from " << source
               << "; each is served again once its store announces it";
  return Status::Ok();
}

}  // namespace mc::masterd

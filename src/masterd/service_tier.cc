// MasterService's disk-tier operations and the hooks the others call
// (TierService does the work; see tier_service.h).
#include "masterd/service.h"

#include "common/log.h"
#include "masterd/journal.h"
#include "masterd/tier_service.h"

namespace mc::masterd {

namespace {
Status NoTier() {
  return Error(ErrorCode::NOT_SUPPORTED,
               "this master runs without --enable-offload: disk tiers are not used");
}
}  // namespace

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
  FlushTierChanges();
  return r;
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
  std::lock_guard<std::mutex> lock(mu_);
  if (!tier_ || journal == nullptr) return Status::Ok();
  tier_journal_ = journal;
  uint64_t n = 0;
  MC_RETURN_IF_ERROR(journal->LoadDiskReplicas(
      [&](const std::string& key, const std::string& disk_id, uint64_t size_bytes) {
        tier_->Load(key, disk_id, size_bytes);
        ++n;
      }));
  MC_LOG(INFO) << "disk tier: " << n << " disk replicas loaded from " << journal->path()
               << "; each is served again once its store announces it";
  return Status::Ok();
}

}  // namespace mc::masterd

// MasterService: retiring removed and replaced objects on their stores
// before the removal is answered (retirer.h, issue 33 gap A).
#include <set>

#include "common/capability.h"
#include "common/log.h"
#include "masterd/retirer.h"
#include "masterd/service.h"

namespace mc::masterd {

namespace {
// A retire grant is used at once by the master itself; a short life is enough.
constexpr uint64_t kRetireGrantTtlMs = 60000;
}  // namespace

void MasterService::SetRetirer(Retirer* retirer) {
  std::lock_guard<std::mutex> lock(mu_);
  retirer_.store(retirer);
  state_->set_track_stale_ranges(retirer != nullptr);
}

uint64_t MasterService::RetireLocked(uint64_t* seen) {
  Retirer* retirer = retirer_.load();
  if (retirer == nullptr) return 0;
  return SubmitRetiresLocked(retirer, state_->TakeStaleRanges(), seen);
}

uint64_t MasterService::SubmitRetiresLocked(Retirer* retirer,
                                            const std::vector<master::StaleRange>& stale,
                                            uint64_t* seen) {
  if (seen != nullptr) *seen = retirer->reported();
  if (stale.empty()) return retirer->Submit({});
  const uint64_t wall_ms = clock_.UnixMs();
  std::vector<Retirer::Item> items;
  items.reserve(stale.size());
  for (const master::StaleRange& s : stale) {
    Retirer::Item item{s.endpoint, {s.offset, s.size_bytes, {}}, s.segment};
    transfer::Grant& g = item.range.grant;
    g.offset = s.offset;
    g.size_bytes = s.size_bytes;
    g.expiry_unix_ms = wall_ms + kRetireGrantTtlMs;
    g.term = grant_term();
    auto key = segment_keys_.find(s.segment);
    if (key != segment_keys_.end()) {  // a store that gave no key checks nothing
      CapabilityGrant c{CapabilityOp::kRetire, key->second.incarnation, s.offset, s.size_bytes,
                        g.expiry_unix_ms, g.term};
      g.signature = SignCapability(key->second.access_key, c);
    }
    items.push_back(std::move(item));
  }
  return retirer->Submit(std::move(items));
}

MasterService::FreeSpaceRetired MasterService::RetireFreeSpace() {
  FreeSpaceRetired out;
  Retirer* retirer = retirer_.load();
  if (retirer == nullptr) return out;
  const uint64_t added_before = RetireStats().quarantine.added;
  // What the load itself removed goes first; then the free space, a pass of
  // the sender's at a time, so neither the queue nor this list grows with
  // the pool's fragmentation.
  uint64_t seen = 0;
  uint64_t ticket = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    return RetireLocked(&seen);
  }();
  std::set<std::string> failed;  // segments a store did not retire: the rest is quarantined whole
  master::MasterState::FreeCursor cursor;
  for (;;) {
    if (!AwaitRetired(ticket, seen)) {
      std::lock_guard<std::mutex> lock(mu_);
      ApplyRetireOutcomesLocked(&failed);
    }
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<master::StaleRange> ranges = state_->NextFreeRanges(&cursor, kMaxRetiresPerPass);
    if (ranges.empty()) break;
    out.ranges += ranges.size();
    std::erase_if(ranges, [&](const master::StaleRange& r) { return failed.contains(r.segment); });
    ticket = SubmitRetiresLocked(retirer, ranges, &seen);
  }
  const uint64_t until_us = clock_.NowUs() + kRetireQuarantineUs;
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& segment : failed) {
    (void)state_->QuarantineRange(segment, 0, 0, until_us);  // 0: all of it
  }
  out.quarantined_segments = failed.size();
  out.quarantined = static_cast<size_t>(state_->quarantine_stats().added - added_before);
  if (out.ranges == 0) return out;
  MC_LOG(INFO) << "start-up: retired the free space of the mounted segments on their stores ("
               << out.ranges << " ranges) before serving; " << failed.size()
               << " segments whose store did not retire it are quarantined for "
               << kRetireQuarantineUs / 1000000 << " s (or until the segment is mounted again)";
  return out;
}

bool MasterService::AwaitRetired(uint64_t ticket, uint64_t seen) {
  if (ticket == 0) return true;
  Retirer* r = retirer_.load();
  if (r == nullptr) return true;
  // The failures of our ranges are reported before they count as sent, so
  // an unchanged count after the wait means none of them failed.
  return r->Await(ticket) && r->reported() == seen;
}

void MasterService::ApplyRetireOutcomesLocked(std::set<std::string>* failed_segments) {
  Retirer* r = retirer_.load();
  if (r == nullptr) return;
  Retirer::Outcomes o = r->TakeOutcomes();
  if (o.failed.empty() && o.recovered.empty()) return;
  const uint64_t until_us = clock_.NowUs() + kRetireQuarantineUs;
  for (const Retirer::Item& i : o.failed) {
    if (failed_segments != nullptr) failed_segments->insert(i.segment);
    // NOT_FOUND: the segment went meanwhile, and its space with it.
    (void)state_->QuarantineRange(i.segment, i.range.offset, i.range.size_bytes, until_us);
  }
  for (const Retirer::Item& i : o.recovered) {
    state_->ReleaseQuarantine(i.segment, i.range.offset, i.range.size_bytes);
  }
  const master::MasterState::QuarantineStats q = state_->quarantine_stats();
  MC_LOG(WARN) << "retire quarantine: " << o.failed.size() << " ranges added, "
               << o.recovered.size() << " released by a retry; now " << q.ranges << " ranges, "
               << q.bytes << " bytes withheld from new objects (master_retire_quarantined_bytes)";
}

namespace {
bool AnyQuarantined(const master::MasterState& state, const std::vector<msg::ReplicaDesc>& reps) {
  for (const msg::ReplicaDesc& rep : reps) {
    for (const msg::BufferDesc& b : rep.buffers) {
      if (state.InQuarantine(b.segment_name, b.offset, b.size_bytes)) return true;
    }
  }
  return false;
}

Status QuarantineRefusal(const std::string& key) {
  return Error(ErrorCode::NO_AVAILABLE_HANDLE,
               "no space for '" + key + "': the space found lies in a range whose retire "
               "failed (quarantined, mooncake-protocol(7))");
}
}  // namespace

void MasterService::RefuseQuarantined(const msg::ClientId& client, const std::string& key,
                                      Result<msg::PutStartReply>* reply) {
  if (!reply->ok() || !AnyQuarantined(*state_, (*reply)->replicas)) return;
  (void)state_->PutRevoke({client, key}, clock_.NowUs());  // its space joins the quarantine
  *reply = QuarantineRefusal(key);
}

void MasterService::RefuseQuarantined(const msg::ClientId& client, const std::string& key,
                                      msg::BatchItem<msg::PutStartReply>* item) {
  if (!item->status.ok() || !AnyQuarantined(*state_, item->value.replicas)) return;
  (void)state_->PutRevoke({client, key}, clock_.NowUs());
  *item = {QuarantineRefusal(key), {}};
}

void MasterService::RefuseQuarantined(const msg::TaskRequest& req,
                                      Result<msg::TaskStartReply>* reply) {
  if (!reply->ok() || !AnyQuarantined(*state_, (*reply)->targets)) return;
  // The task fails: its targets' space joins the quarantine.
  (void)state_->TaskEnd({req.client, req.task, false, "target space quarantined"},
                        clock_.NowUs());
  *reply = QuarantineRefusal((*reply)->key);
}

MasterService::RetireReport MasterService::RetireStats() const {
  RetireReport out;
  out.retirer = retirer_.load();
  if (out.retirer != nullptr) {
    const Retirer::Stats s = out.retirer->stats();
    out.failed = s.failed;
    out.recovered = s.recovered;
    out.late_replies = s.late_replies;
  }
  std::lock_guard<std::mutex> lock(mu_);
  out.quarantine = state_->quarantine_stats();
  return out;
}

}  // namespace mc::masterd

#include "masterd/service.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "common/capability.h"
#include "common/log.h"
#include "common/units.h"
#include "eviction/policy.h"
#include "masterd/tier_service.h"

namespace mc::masterd {

namespace {
thread_local uint64_t t_private_ops = 0;  // see TakePrivateOps
}  // namespace

uint64_t MasterService::TakePrivateOps() {
  return std::exchange(t_private_ops, 0);
}

master::Options MasterOptions(const MasterConfig& c) {
  master::Options o;
  o.default_kv_lease_ttl_us = c.default_kv_lease_ttl_us;
  o.default_kv_soft_pin_ttl_us = c.default_kv_soft_pin_ttl_us;
  o.eviction_high_watermark_ratio = c.eviction_high_watermark_ratio;
  o.eviction_ratio = c.eviction_ratio;
  o.client_ttl_us = c.client_ttl_us;
  o.put_timeout_us = c.put_timeout_us;
  o.stripe_size_bytes = c.stripe_size_bytes;
  o.max_batch = c.max_batch;
  o.max_key_bytes = c.max_key_bytes;
  o.index_hugepages = c.hugepages;
  // With the disk tier the tick offloads (TierService) instead of dropping.
  o.background_eviction = !(c.enable_offload || c.offload_on_evict);
  return o;
}

namespace {

// The config's choices are the factory's names, so the policy exists.
std::unique_ptr<master::EvictionPolicy> MakePolicy(const MasterConfig& config) {
  auto policy = master::MakeEvictionPolicy(config.eviction_policy, 0, master::IdSpace::kSlotted);
  if (!policy) {
    std::fprintf(stderr, "mooncake master: unknown eviction policy '%s'\n",
                 config.eviction_policy.c_str());
    std::abort();
  }
  return policy;
}

}  // namespace

MasterService::MasterService(const MasterConfig& config, const Clock& clock,
                             master::StateListener* listener)
    : config_(config),
      clock_(clock),
      state_(std::make_unique<master::MasterState>(
          StateOptions(config), MakePolicy(config), TierTap(config, listener))) {
  if (config.enable_offload || config.offload_on_evict) tier_ = std::make_unique<TierService>(config);
}

MasterService::~MasterService() = default;

// The state LeaveStateToExit gave up: held by a global, so a leak checker
// still finds it reachable. Volatile: a store nothing reads is otherwise
// dropped by the compiler, and the state with it (LeakSanitizer saw that).
static master::MasterState* volatile g_state_left_to_exit = nullptr;

void MasterService::LeaveStateToExit() {
  std::lock_guard<std::mutex> lock(mu_);
  g_state_left_to_exit = state_.release();
}

void MasterService::Sign(msg::ReplicaDesc* replica, bool write, uint64_t now_wall_ms) {
  // A write grant ends no later than the put's deadline (an unfinished put's
  // space is not freed before it) and a read grant no later than the lease
  // the get just took (a leased object is not removed or evicted): the wall
  // time was read before the state machine's clock and is rounded down, so
  // the grant never outlives either. See common/capability.h.
  uint64_t ttl_us = write ? config_.put_timeout_us : config_.default_kv_lease_ttl_us;
  for (msg::BufferDesc& b : replica->buffers) {
    auto it = segment_keys_.find(b.segment_name);
    if (it == segment_keys_.end()) continue;  // store gave no key: it checks nothing
    CapabilityGrant g{write ? CapabilityOp::kWrite : CapabilityOp::kRead,
                      it->second.incarnation, b.offset, b.size_bytes,
                      now_wall_ms + ttl_us / 1000, grant_term()};
    b.capability = SignCapability(it->second.access_key, g);
    b.capability_term = g.term;
    b.capability_expiry_unix_ms = g.expiry_unix_ms;
    if (!write) {
      // A direct read's grant may outlive the lease: the store serves it only
      // on a sealed read naming a seal, which reused space fails.
      g.op = CapabilityOp::kReadSealed;
      g.expiry_unix_ms = now_wall_ms + kSealedReadGrantTtlUs / 1000;
      b.sealed_capability = SignCapability(it->second.access_key, g);
      b.sealed_capability_expiry_unix_ms = g.expiry_unix_ms;
    }
  }
}

void MasterService::SignAll(std::vector<msg::ReplicaDesc>* replicas, bool write,
                            uint64_t wall_before_ms) {
  for (auto& r : *replicas) Sign(&r, write, wall_before_ms);
}

Status MasterService::MountSegment(const msg::MountSegmentRequest& req) {
  std::lock_guard<std::mutex> lock(mu_);
  Status st = state_->MountSegment(req, clock_.NowUs());
  if (!st.ok()) return st;
  if (!req.segment.access_key.empty()) {
    segment_keys_[req.segment.name] = {req.segment.access_key, req.segment.incarnation};
  }
  MC_LOG(INFO) << "segment " << req.segment.name << " mounted ("
               << FormatBytesHuman(req.segment.size_bytes) << ", client "
               << req.client.ToString() << ")";
  return st;
}

void MasterService::AdoptLoadedSegments() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const master::SegmentDump& s : state_->DumpSegments()) {
    if (!s.desc.access_key.empty())
      segment_keys_[s.desc.name] = {s.desc.access_key, s.desc.incarnation};
  }
}

Status MasterService::UnmountSegment(const msg::UnmountSegmentRequest& req) {
  std::lock_guard<std::mutex> lock(mu_);
  Status st = state_->UnmountSegment(req, clock_.NowUs());
  if (st.ok()) {
    segment_keys_.erase(req.segment_name);
    if (tier_) tier_->OnSegmentGone(req.segment_name);
    MC_LOG(INFO) << "segment " << req.segment_name << " unmounted";
  }
  return st;
}

Result<msg::PingReply> MasterService::Ping(const msg::PingRequest& req) {
  ++t_private_ops;
  std::lock_guard<std::mutex> lock(mu_);
  msg::PingReply r = state_->Ping(req, clock_.NowUs());
  r.term = grant_term();
  return r;
}

Result<msg::PutStartReply> MasterService::PutStart(const msg::PutStartRequest& req) {
  ++t_private_ops;
  // Space it hands out (evicted, or freed by a removal) is retired first.
  return Retiring([&]() -> Result<msg::PutStartReply> {
    const uint64_t wall_ms = clock_.UnixMs();  // before the lease starts
    if (TierHas(req.key))
      return Error(ErrorCode::OBJECT_ALREADY_EXISTS, "key '" + req.key + "' exists (on disk)");
    if (TierHolds(req.size_bytes * req.options.replicas, clock_.NowUs()))
      return Error(ErrorCode::REPLICA_IS_NOT_READY, "held for offloads");  // parked: not sent
    auto r = state_->PutStart(req, clock_.NowUs());
    if (r.ok()) SignAll(&r->replicas, true, wall_ms);
    return r;
  }, [&](Result<msg::PutStartReply>& r) { RefuseQuarantined(req.client, req.key, &r); });
}

Status MasterService::PutEnd(const msg::KeyRequest& req) {
  // An upsert's end replaces the old version: retired before the reply.
  return Retiring([&] { return state_->PutEnd(req, clock_.NowUs()); });
}

Status MasterService::PutRevoke(const msg::KeyRequest& req) {
  ++t_private_ops;
  std::lock_guard<std::mutex> lock(mu_);
  return state_->PutRevoke(req, clock_.NowUs());
}

Result<msg::GetReplicaListReply> MasterService::GetReplicaList(const msg::KeyRequest& req) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t wall_ms = clock_.UnixMs();  // before the lease starts
  const uint64_t now_us = clock_.NowUs();
  if (TierHolds(TierStageBytes({req}), now_us))
    return Error(ErrorCode::REPLICA_IS_NOT_READY, "held for offloads");  // parked: not sent
  auto r = state_->GetReplicaList(req, now_us);
  if (!r.ok()) return TierReadMiss(req.key, r.status(), now_us);
  TierReadHit(req.key);
  SignAll(&r->replicas, false, wall_ms);
  return r;
}

Result<bool> MasterService::ExistKey(const msg::KeyRequest& req) {
  std::lock_guard<std::mutex> lock(mu_);
  auto r = state_->ExistKey(req, clock_.NowUs());
  if (r.ok() && !*r && TierHas(req.key)) return true;
  return r;
}

Status MasterService::RemoveLocked(const msg::RemoveRequest& req) {
  Status st = state_->Remove(req, clock_.NowUs());
  if (st.ok() || st.code() == ErrorCode::OBJECT_NOT_FOUND) {
    if (TierForget(req.key)) return Status::Ok();
  }
  return st;
}

Status MasterService::Remove(const msg::RemoveRequest& req) {
  return Retiring([&] { return RemoveLocked(req); });
}

Result<msg::RemoveAllReply> MasterService::RemoveAll(const proto::Empty&) {
  return RemoveAllEx({});
}

Result<msg::RemoveAllReply> MasterService::RemoveAllEx(const msg::RemoveAllRequest& req) {
  return Retiring([&] {
    msg::RemoveAllReply r = state_->RemoveAll(clock_.NowUs(), req.force);
    r.removed += TierForgetAll();
    return Result<msg::RemoveAllReply>(r);
  });
}

Result<msg::ListKeysReply> MasterService::ListKeys(const msg::ListKeysRequest& req) {
  MC_ASSIGN_OR_RETURN(msg::TieredListKeysReply r, ListKeysTiered(req));
  return std::move(r.list);
}

Result<msg::ClusterStatusReply> MasterService::ClusterStatus(const proto::Empty&) {
  return Snapshot();
}

Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> MasterService::BatchPutStart(
    const msg::Batch<msg::PutStartRequest>& req) {
  ++t_private_ops;
  // Space it hands out (evicted, or freed by a removal) is retired first.
  return Retiring([&]() -> Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> {
    const uint64_t wall_ms = clock_.UnixMs();  // before the lease starts
    uint64_t need_bytes = 0;
    for (const msg::PutStartRequest& p : req) need_bytes += p.size_bytes * p.options.replicas;
    if (TierHolds(need_bytes, clock_.NowUs()))
      return Error(ErrorCode::REPLICA_IS_NOT_READY, "held for offloads");  // parked: not sent
    auto r = state_->BatchPutStart(req, clock_.NowUs());
    if (r.ok()) {
      for (size_t i = 0; i < r->size(); ++i) {
        auto& item = (*r)[i];
        if (item.status.ok() && TierHas(req[i].key)) {  // exists on disk: undo this one
          (void)state_->PutRevoke({req[i].client, req[i].key}, clock_.NowUs());
          item = {Error(ErrorCode::OBJECT_ALREADY_EXISTS, "key '" + req[i].key + "' exists (on disk)"), {}};
        }
        if (item.status.ok()) SignAll(&item.value.replicas, true, wall_ms);
      }
    }
    return r;
  }, [&](Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>>& r) {
    if (!r.ok()) return;
    for (size_t i = 0; i < r->size(); ++i) RefuseQuarantined(req[i].client, req[i].key, &(*r)[i]);
  });
}

Result<msg::Batch<Status>> MasterService::BatchPutEnd(const msg::Batch<msg::KeyRequest>& req) {
  return Retiring([&] { return state_->BatchPutEnd(req, clock_.NowUs()); });
}

Result<msg::Batch<Status>> MasterService::BatchPutRevoke(
    const msg::Batch<msg::KeyRequest>& req) {
  ++t_private_ops;
  std::lock_guard<std::mutex> lock(mu_);
  return state_->BatchPutRevoke(req, clock_.NowUs());
}

Result<msg::Batch<msg::BatchItem<msg::GetReplicaListReply>>>
MasterService::BatchGetReplicaList(const msg::Batch<msg::KeyRequest>& req) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t wall_ms = clock_.UnixMs();  // before the lease starts
  const uint64_t now_us = clock_.NowUs();
  if (TierHolds(TierStageBytes(req), now_us))
    return Error(ErrorCode::REPLICA_IS_NOT_READY, "held for offloads");  // parked: not sent
  auto r = state_->BatchGetReplicaList(req, now_us);
  if (r.ok()) {
    for (size_t i = 0; i < r->size(); ++i) {
      auto& item = (*r)[i];
      if (!item.status.ok()) {
        item.status = TierReadMiss(req[i].key, item.status, now_us);
        continue;
      }
      TierReadHit(req[i].key);
      SignAll(&item.value.replicas, false, wall_ms);
    }
  }
  return r;
}

Result<msg::Batch<msg::BatchItem<bool>>> MasterService::BatchExistKey(
    const msg::Batch<msg::KeyRequest>& req) {
  std::lock_guard<std::mutex> lock(mu_);
  auto r = state_->BatchExistKey(req, clock_.NowUs());
  if (r.ok()) {
    for (size_t i = 0; i < r->size(); ++i)
      if ((*r)[i].status.ok() && !(*r)[i].value && TierHas(req[i].key)) (*r)[i].value = true;
  }
  return r;
}

Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> MasterService::BatchPutStartEx(
    const msg::Batch<msg::PutStartExRequest>& req) {
  return BatchPutStart(rpc::WithoutEx(req));
}

Result<msg::Batch<Status>> MasterService::BatchRemove(const msg::Batch<msg::RemoveRequest>& req) {
  // One wait for the whole batch's retires.
  return Retiring([&] {
    return rpc::EachItem(req, [&](const msg::RemoveRequest& r) { return RemoveLocked(r); });
  });
}

Status MasterService::ReleaseLeases(const msg::Batch<msg::KeyRequest>& req) {
  std::lock_guard<std::mutex> lock(mu_);
  state_->ReleaseLeases(req, clock_.NowUs());
  return Status::Ok();
}

Status MasterService::ReportTransfers(const msg::TransferReport& req) {
  std::lock_guard<std::mutex> lock(transfers_mu_);
  for (const msg::TransferCount& c : req.counts) {
    if (c.path >= msg::kTransferPaths || c.dir >= msg::kTransferDirs) continue;
    TransferTotal& t = transfers_[c.path][c.dir];
    t.ops += c.ops;
    t.bytes += c.bytes;
  }
  return Status::Ok();
}

Status MasterService::ReportAccesses(const msg::AccessReport& req) {
  ++t_private_ops;
  std::lock_guard<std::mutex> lock(mu_);
  state_->ReportAccesses(req, clock_.NowUs());
  return Status::Ok();
}

MasterService::TransferTotals MasterService::Transfers() const {
  std::lock_guard<std::mutex> lock(transfers_mu_);
  return transfers_;
}

master::TickReport MasterService::Tick() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t now_us = clock_.NowUs();
  master::TickReport r = state_->Tick(now_us);
  TierTick(now_us);
  (void)RetireLocked();  // expired leases' forced removals etc.; nobody waits
  ApplyRetireOutcomesLocked();  // failures nobody waited for, retries that succeeded
  if (r.unmounted_segments > 0) {
    // Forget keys of segments that are gone, so a stale capability cannot be
    // minted for a name a new store reuses.
    auto status = state_->ClusterStatus(clock_.NowUs());
    std::map<std::string, SegmentKey, std::less<>> kept;
    for (const auto& seg : status.segments) {
      auto it = segment_keys_.find(seg.name);
      if (it != segment_keys_.end()) kept.insert(*it);
    }
    for (const auto& [name, key] : segment_keys_)
      if (!kept.contains(name) && tier_) tier_->OnSegmentGone(name);
    segment_keys_.swap(kept);
  }
  if (r.expired_clients || r.discarded_puts || r.evicted_keys) {
    MC_LOG(INFO) << "tick: " << r.expired_clients << " dead clients, " << r.unmounted_segments
                 << " segments unmounted, " << r.discarded_puts << " stale puts discarded, "
                 << r.evicted_keys << " keys (" << FormatBytesHuman(r.evicted_bytes)
                 << ") evicted";
  }
  return r;
}

master::MasterCounters MasterService::Counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_->counters();
}

msg::ClusterStatusReply MasterService::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_->ClusterStatus(clock_.NowUs());
}

Result<master::ObjectDump> MasterService::QueryKey(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  // A cheap existence check first; the dump that finds the buffers is O(n)
  // under the lock, acceptable for an admin endpoint, never on the data path.
  msg::ListKeysRequest req;
  req.prefix = key;
  req.limit = 1;
  auto page = state_->ListKeys(req, clock_.NowUs());
  if (!page.ok() || page->keys.empty() || page->keys[0].key != key) {
    return Error(ErrorCode::OBJECT_NOT_FOUND, "key '" + key + "' not found");
  }
  for (auto& obj : state_->DumpObjects(true)) {
    if (obj.key == key) return obj;
  }
  return Error(ErrorCode::OBJECT_NOT_FOUND, "key '" + key + "' not found");
}

std::vector<std::string> MasterService::AllKeys() const {
  std::vector<std::string> keys;
  msg::ListKeysRequest req;
  req.limit = config_.max_batch;
  for (;;) {
    std::lock_guard<std::mutex> lock(mu_);
    auto page = state_->ListKeys(req, clock_.NowUs());
    if (!page.ok()) break;
    for (auto& k : page->keys) keys.push_back(std::move(k.key));
    if (page->next_cursor.empty()) break;
    req.cursor = page->next_cursor;
  }
  return keys;
}

std::string MasterService::Summary() const {
  master::MasterCounters c = Counters();
  double pct = c.capacity_bytes ? 100.0 * static_cast<double>(c.allocated_bytes) /
                                      static_cast<double>(c.capacity_bytes)
                                : 0.0;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "Storage: %s / %s (%.1f%%) | Keys: %llu (soft-pinned: %llu) | Clients: %llu | "
                "Segments: %llu | Requests (Put: %llu, Get: %llu, Remove: %llu) | "
                "Evictions: %llu (%llu keys, %s)",
                FormatBytesHuman(c.allocated_bytes).c_str(),
                FormatBytesHuman(c.capacity_bytes).c_str(), pct,
                static_cast<unsigned long long>(c.key_count),
                static_cast<unsigned long long>(c.soft_pinned_count),
                static_cast<unsigned long long>(c.active_clients),
                static_cast<unsigned long long>(c.segment_count),
                static_cast<unsigned long long>(c.put_start.requests),
                static_cast<unsigned long long>(c.get_replica_list.requests),
                static_cast<unsigned long long>(c.remove.requests),
                static_cast<unsigned long long>(c.successful_evictions),
                static_cast<unsigned long long>(c.evicted_keys),
                FormatBytesHuman(c.evicted_bytes).c_str());
  return buf;
}

}  // namespace mc::masterd

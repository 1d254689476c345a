// MasterService: the replica operations (upserts, copy/move tasks, clearing
// replicas, removal by regex) around the state machine, with their grants.
#include <cstring>

#include "common/crypto.h"
#include "common/log.h"
#include "masterd/service.h"

namespace mc::masterd {

master::Options MasterService::StateOptions(const MasterConfig& config) {
  master::Options o = MasterOptions(config);
  // Ids of a restarted master must not name the old one's tasks.
  const std::string bytes = RandomBytes(sizeof o.task_id_seed);
  std::memcpy(&o.task_id_seed, bytes.data(), sizeof o.task_id_seed);
  return o;
}

Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> MasterService::BatchUpsertStart(
    const msg::Batch<msg::PutStartExRequest>& req) {
  msg::Batch<msg::PutStartRequest> plain;
  plain.reserve(req.size());
  for (const auto& r : req) plain.push_back(r.start);
  // Space it hands out (evicted, or freed by a removal) is retired first.
  return Retiring([&]() -> Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> {
    // As BatchPutStart: memory is kept under the high watermark by offloads,
    // and while they are in flight a batch that does not fit waits for them.
    uint64_t need_bytes = 0;
    for (const auto& r : plain) need_bytes += r.size_bytes * r.options.replicas;
    if (TierHolds(need_bytes, clock_.NowUs()))
      return Error(ErrorCode::REPLICA_IS_NOT_READY, "held for offloads");  // parked: not sent
    for (const auto& r : plain) TierForget(r.key);  // a disk copy would be stale
    const uint64_t wall_ms = clock_.UnixMs();  // before the put's deadline starts
    auto r = state_->BatchUpsertStart(plain, clock_.NowUs());
    if (r.ok()) {
      for (auto& item : *r) {
        if (item.status.ok()) SignAll(&item.value.replicas, true, wall_ms);
      }
    }
    return r;
  }, [&](Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>>& r) {
    if (!r.ok()) return;
    for (size_t i = 0; i < r->size(); ++i) RefuseQuarantined(plain[i].client, plain[i].key, &(*r)[i]);
  });
}

Result<msg::TaskId> MasterService::CreateCopyTask(const msg::CreateCopyTaskRequest& req) {
  std::lock_guard<std::mutex> lock(mu_);
  auto r = state_->CreateCopyTask(req, clock_.NowUs(), clock_.UnixMs());
  if (!r.ok()) MC_LOG(INFO) << "copy task of '" << req.key << "': " << r.status().ToString();
  return r;
}

Result<msg::TaskId> MasterService::CreateMoveTask(const msg::CreateMoveTaskRequest& req) {
  std::lock_guard<std::mutex> lock(mu_);
  auto r = state_->CreateMoveTask(req, clock_.NowUs(), clock_.UnixMs());
  if (!r.ok()) MC_LOG(INFO) << "move task of '" << req.key << "': " << r.status().ToString();
  return r;
}

Result<msg::TaskInfo> MasterService::QueryTask(const msg::TaskRequest& req) {
  std::lock_guard<std::mutex> lock(mu_);
  return state_->QueryTask(req, clock_.NowUs());
}

Result<msg::TaskStartReply> MasterService::TaskStart(const msg::TaskRequest& req) {
  return Retiring([&] {  // its targets' space is retired first, as a put's
    const uint64_t wall_ms = clock_.UnixMs();  // before the lease and deadline start
    auto r = state_->TaskStart(req, clock_.NowUs());
    if (r.ok()) {
      Sign(&r->source, false, wall_ms);
      SignAll(&r->targets, true, wall_ms);
    }
    return r;
  }, [&](Result<msg::TaskStartReply>& r) { RefuseQuarantined(req, &r); });
}

Status MasterService::TaskEnd(const msg::TaskEndRequest& req) {
  // A move's source replica goes: retired before the reply.
  return Retiring([&] { return state_->TaskEnd(req, clock_.NowUs()); });
}

Result<msg::ReplicaClearReply> MasterService::BatchReplicaClear(
    const msg::ReplicaClearRequest& req) {
  return Retiring([&] {
    return Result<msg::ReplicaClearReply>(state_->BatchReplicaClear(req, clock_.NowUs()));
  });
}

Result<msg::RemoveByRegexReply> MasterService::RemoveByRegex(
    const msg::RemoveByRegexRequest& req) {
  return Retiring([&] { return state_->RemoveByRegex(req, clock_.NowUs()); });
}

}  // namespace mc::masterd

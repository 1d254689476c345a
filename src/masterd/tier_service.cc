#include "masterd/tier_service.h"

#include <algorithm>

#include "common/log.h"
#include "common/units.h"

namespace mc::masterd {

namespace {
// The client id of the master's own puts (memory copies staged from disk).
constexpr msg::ClientId kTierClient{0x6d632d7469657200ull, 1};
}  // namespace

TierService::TierService(const MasterConfig& config)
    : config_(config), gate_(kPromotionWindowUs, config.promotion_admission_threshold) {}

uint64_t TierService::Queue(const std::string& segment, msg::TierWorkKind kind,
                            const std::string& key, uint64_t offset, uint64_t size_bytes) {
  const uint64_t ticket = next_ticket_++;
  wake_ = true;
  queues_[segment].push_back(
      {ticket, static_cast<uint8_t>(kind), key, offset, size_bytes});
  return ticket;
}

void TierService::QueueDeletes(const std::string& segment, const std::vector<std::string>& keys) {
  for (const auto& k : keys) Queue(segment, msg::TierWorkKind::kDelete, k, 0, 0);
}

void TierService::Record(const std::string& key, const std::string& disk_id, uint64_t size) {
  const std::vector<std::string> dropped = disks_.Add(key, disk_id, size);
  changes_.push_back({key, disk_id, size});
  const auto* disk = disks_.FindDisk(disk_id);
  for (const auto& k : dropped) {
    changes_.push_back({k, "", 0});
    ++counters_.disk_evictions;
    if (disk != nullptr && !disk->segment_name.empty())
      Queue(disk->segment_name, msg::TierWorkKind::kDelete, k, 0, 0);
  }
}

void TierService::Unrecord(const std::string& key) {
  if (disks_.Remove(key)) changes_.push_back({key, "", 0});
  gate_.Forget(key);
}

void TierService::Load(const std::string& key, const std::string& disk_id, uint64_t size) {
  disks_.Add(key, disk_id, size);
}

std::vector<TierService::Change> TierService::TakeChanges() { return std::exchange(changes_, {}); }

bool TierService::Forget(const std::string& key) {
  const master::DiskReplicas::Entry* e = disks_.Find(key);
  if (e == nullptr) return false;
  const master::DiskReplicas::Disk* d = disks_.FindDisk(e->disk_id);
  // A store away now is told at its next announce (no record: delete).
  if (d != nullptr && !d->segment_name.empty())
    Queue(d->segment_name, msg::TierWorkKind::kDelete, key, 0, 0);
  Unrecord(key);
  return true;
}

uint64_t TierService::ForgetAll() {
  std::vector<std::string> keys;
  for (const auto& [k, e] : disks_.entries()) keys.push_back(k);
  for (const auto& k : keys) Forget(k);
  return keys.size();
}

void TierService::OnSegmentGone(const std::string& segment_name) {
  wake_ = true;  // its worker's poll is answered (SEGMENT_NOT_FOUND)
  disks_.DetachSegment(segment_name);
  queues_.erase(segment_name);
}

void TierService::OnReadHit(const std::string& key) { disks_.Touch(key); }

bool TierService::Staging(const std::string& key) const { return staging_.contains(key); }

uint64_t TierService::StageBytes(const master::MasterState& state, const std::string& key) const {
  const master::DiskReplicas::Entry* e = disks_.Find(key);
  if (e == nullptr || Staging(key) || state.CompleteId(key)) return 0;
  return e->size_bytes;
}

Status TierService::OnReadMiss(master::MasterState& state, const std::string& key,
                               const Status& missed, uint64_t now_us) {
  const std::string waiting = std::string(msg::kStagingFromDisk) + ": key '" + key + "'";
  if (Staging(key)) return Error(ErrorCode::REPLICA_IS_NOT_READY, waiting);
  if (missed.code() != ErrorCode::OBJECT_NOT_FOUND) return missed;
  const master::DiskReplicas::Disk* disk = disks_.ReadableDisk(key);
  if (disk == nullptr) return missed;
  const uint64_t size = disks_.Find(key)->size_bytes;
  msg::PutStartRequest put{kTierClient, key, size, {}};
  put.options.placement.preferred_segments = {disk->segment_name};
  auto placed = state.PutStart(put, now_us);
  if (!placed.ok()) {
    return Error(placed.code(), "key '" + key + "' is on disk, and no memory could be found to"
                                " read it into: " + placed.status().message());
  }
  const auto& bufs = placed->replicas.at(0).buffers;
  if (placed->replicas.size() != 1 || bufs.size() != 1 || bufs[0].segment_name != disk->segment_name) {
    (void)state.PutRevoke({kTierClient, key}, now_us);
    return Error(ErrorCode::NO_AVAILABLE_HANDLE,
                 "key '" + key + "' is on the disk of " + disk->segment_name +
                     ", whose segment has no room to read it into");
  }
  const uint64_t ticket =
      Queue(disk->segment_name, msg::TierWorkKind::kStage, key, bufs[0].offset, size);
  in_flight_[ticket] = {msg::TierWorkKind::kStage, key, disk->segment_name, 0, size,
                        now_us + config_.put_timeout_us,
                        config_.promotion_on_hit && gate_.Hit(key, now_us)};
  staging_[key] = ticket;
  disks_.Touch(key);
  return Error(ErrorCode::REPLICA_IS_NOT_READY, waiting);
}

bool TierService::OffloadAhead(master::MasterState& state, uint64_t need_bytes,
                               uint64_t now_us) {
  if (!config_.enable_offload && !config_.offload_on_evict) return false;
  const uint64_t capacity = state.capacity_bytes(), allocated = state.allocated_bytes();
  const auto mark = static_cast<uint64_t>(config_.eviction_high_watermark_ratio *
                                          static_cast<double>(capacity));
  // What memory holds once the writes in flight are done, this put included.
  const uint64_t committed = allocated - std::min(allocated, offloading_bytes_) + need_bytes;
  if (committed > mark) Offload(state, committed - mark, now_us);
  return need_bytes > capacity - std::min(capacity, allocated) && offloading_bytes_ > 0;
}

void TierService::Offload(master::MasterState& state, uint64_t target, uint64_t now_us) {
  auto offloadable = [&](std::string_view segment) {
    auto q = queues_.find(std::string(segment));
    return disks_.DiskOfSegment(segment).has_value() &&
           (q == queues_.end() || q->second.size() < kMaxQueuedPerStore);
  };
  const auto victims = state.TakeOffloadVictims(target, now_us, offloadable);
  for (const auto& v : victims) {
    const master::DiskReplicas::Entry* e = disks_.Find(v.key);
    if (e != nullptr && e->size_bytes == v.size_bytes) {
      // Already on disk (read back from it): nothing to write.
      state.DropMemoryCopy(v.id, now_us);
      staged_.erase(v.key);
      wake_ = true;
      continue;
    }
    // The disk drops its least recently used objects to make room for this
    // write and those still in flight to it (the store refuses a write
    // past its capacity).
    const std::string disk_id = *disks_.DiskOfSegment(v.segment);
    uint64_t& pending = offloading_file_bytes_[v.segment];
    pending += master::DiskReplicas::FileBytes(v.key, v.size_bytes);
    const std::vector<std::string> dropped = disks_.MakeRoom(disk_id, pending);
    for (const auto& k : dropped) changes_.push_back({k, "", 0});
    counters_.disk_evictions += dropped.size();
    QueueDeletes(v.segment, dropped);
    const uint64_t ticket =
        Queue(v.segment, msg::TierWorkKind::kOffload, v.key, v.offset, v.size_bytes);
    in_flight_[ticket] = {msg::TierWorkKind::kOffload, v.key, v.segment, v.id, v.size_bytes,
                          now_us + config_.put_timeout_us, false};
    offloading_bytes_ += v.size_bytes;
  }
}

void TierService::Tick(master::MasterState& state, uint64_t now_us) {
  std::vector<uint64_t> late;
  for (const auto& [ticket, f] : in_flight_)
    if (f.deadline_us <= now_us) late.push_back(ticket);
  for (uint64_t t : late) {
    InFlight f = in_flight_[t];
    in_flight_.erase(t);
    Finish(state, f, Error(ErrorCode::RPC_TIMEOUT, "the store did not report in time"), now_us);
  }
  for (auto it = staged_.begin(); it != staged_.end();) {
    if (it->second.second > now_us) { ++it; continue; }
    state.DropMemoryCopy(it->second.first, now_us, true);  // still on disk
    it = staged_.erase(it);
    wake_ = true;
  }
  OffloadAhead(state, 0, now_us);
}

void TierService::Finish(master::MasterState& state, const InFlight& f, const Status& st,
                         uint64_t now_us) {
  wake_ = true;  // memory freed (offload) or filled (stage): puts held may go on
  switch (f.kind) {
    case msg::TierWorkKind::kOffload: {
      offloading_bytes_ -= std::min(offloading_bytes_, f.size_bytes);
      if (auto p = offloading_file_bytes_.find(f.segment); p != offloading_file_bytes_.end()) {
        p->second -= std::min(p->second, master::DiskReplicas::FileBytes(f.key, f.size_bytes));
        if (p->second == 0) offloading_file_bytes_.erase(p);
      }
      if (!st.ok()) {
        ++counters_.offload_failures;
        if (st.code() != ErrorCode::NO_AVAILABLE_HANDLE) ++counters_.io_errors;
        MC_LOG(WARN) << "disk tier: offload of '" << f.key << "' to " << f.segment
                     << " failed (" << st.ToString() << "); evicted from memory instead";
        state.DropMemoryCopy(f.id, now_us);
        return;
      }
      auto disk_id = disks_.DiskOfSegment(f.segment);
      const auto current = state.CompleteId(f.key);
      if (!disk_id || !current || *current != f.id) {
        // Removed or replaced while it was written: the file is stale.
        state.DropMemoryCopy(f.id, now_us);
        if (!disks_.Find(f.key)) Queue(f.segment, msg::TierWorkKind::kDelete, f.key, 0, 0);
        return;
      }
      Record(f.key, *disk_id, f.size_bytes);
      state.DropMemoryCopy(f.id, now_us);
      ++counters_.offloads;
      counters_.offload_bytes += f.size_bytes;
      return;
    }
    case msg::TierWorkKind::kStage: {
      staging_.erase(f.key);
      if (st.ok() && state.PutEnd({kTierClient, f.key}, now_us).ok()) {
        ++counters_.stages;
        counters_.stage_bytes += f.size_bytes;
        if (f.promote) {
          ++counters_.promotions;
        } else if (auto id = state.CompleteId(f.key)) {
          staged_[f.key] = {*id, now_us + kStagedKeepUs};
        }
        return;
      }
      (void)state.PutRevoke({kTierClient, f.key}, now_us);
      if (st.ok()) return;
      if (st.code() == ErrorCode::CHECKSUM_MISMATCH) {
        ++counters_.checksum_failures;
        MC_LOG(WARN) << "disk tier: '" << f.key << "' on " << f.segment
                     << " failed its checksum; that replica is dropped";
        Unrecord(f.key);  // the store deleted the file
      } else if (st.code() == ErrorCode::OBJECT_NOT_FOUND) {
        Unrecord(f.key);
      } else {
        ++counters_.io_errors;
        MC_LOG(WARN) << "disk tier: reading '" << f.key << "' on " << f.segment
                     << " failed: " << st.ToString();
      }
      return;
    }
    case msg::TierWorkKind::kDelete:
      return;
  }
}

void TierService::Apply(master::MasterState& state, const std::string& segment,
                        const msg::TierResult& r, uint64_t now_us) {
  auto it = in_flight_.find(r.ticket);
  if (it == in_flight_.end() || it->second.segment != segment) return;  // timed out, or deletes
  InFlight f = std::move(it->second);
  in_flight_.erase(it);
  Finish(state, f, r.status, now_us);
}

Result<msg::TierAnnounceReply> TierService::Announce(const msg::TierAnnounceRequest& req) {
  if (!config_.enable_offload && !config_.offload_on_evict) {
    return Error(ErrorCode::NOT_SUPPORTED,
                 "this master runs without --enable-offload: disk tiers are not used");
  }
  if (req.disk_id.empty() || req.segment_name.empty())
    return Error(ErrorCode::INVALID_PARAMS, "a disk announce names its disk and segment");
  if (req.first) {
    disks_.Attach(req.disk_id, req.segment_name, req.client, req.capacity_bytes);
    announcing_[req.disk_id].clear();
    MC_LOG(INFO) << "disk tier " << req.disk_id << " attached through segment "
                 << req.segment_name << " (" << FormatBytesHuman(req.capacity_bytes) << ")";
  }
  msg::TierAnnounceReply reply;
  auto& kept = announcing_[req.disk_id];
  for (const msg::DiskObject& o : req.objects) {
    const master::DiskReplicas::Entry* e = disks_.Find(o.key);
    if (e != nullptr && e->disk_id == req.disk_id && e->size_bytes == o.size_bytes) {
      kept.push_back(o.key);
      ++counters_.readopted;
    } else {
      reply.drop_keys.push_back(o.key);
      ++counters_.refused_at_announce;
    }
  }
  if (req.last) {
    for (const auto& k : disks_.ForgetUnannounced(req.disk_id, kept)) changes_.push_back({k, "", 0});
    const auto* d = disks_.FindDisk(req.disk_id);
    MC_LOG(INFO) << "disk tier " << req.disk_id << ": " << kept.size() << " objects re-adopted ("
                 << (d != nullptr ? FormatBytesHuman(d->used_bytes) : std::string("0 B")) << ")";
    announcing_.erase(req.disk_id);
  }
  return reply;
}

Result<msg::TierFetchReply> TierService::Fetch(master::MasterState& state,
                                               const msg::TierFetchRequest& req, uint64_t now_us) {
  if (!disks_.DiskOfSegment(req.segment_name))
    return Error(ErrorCode::SEGMENT_NOT_FOUND,
                 "segment '" + req.segment_name + "' has announced no disk tier");
  for (const msg::TierResult& r : req.results) Apply(state, req.segment_name, r, now_us);
  msg::TierFetchReply reply;
  auto q = queues_.find(req.segment_name);
  while (q != queues_.end() && !q->second.empty() && reply.work.size() < msg::kMaxTierWorkItems) {
    reply.work.push_back(std::move(q->second.front()));
    q->second.pop_front();
  }
  reply.wait_ms = reply.work.empty() ? kIdleWaitMs : 0;
  return reply;
}

}  // namespace mc::masterd

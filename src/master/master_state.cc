#include "master/master_state.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <functional>

#include "master/master_state_internal.h"

namespace mc::master {

std::string ClientName(const msg::ClientId& id) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(id.hi),
                static_cast<unsigned long long>(id.lo));
  return buf;
}

namespace {

// Counts a request and, when `failed`, a failure; returns `r` unchanged.
template <typename R>
R Count(OpCounter& c, R r, bool failed) {
  ++c.requests;
  if (failed) ++c.failures;
  return r;
}
Status Count(OpCounter& c, Status s) {
  const bool failed = !s.ok();
  return Count(c, std::move(s), failed);
}
template <typename T>
Result<T> Count(OpCounter& c, Result<T> r) {
  const bool failed = !r.ok();
  return Count(c, std::move(r), failed);
}

std::string Quoted(std::string_view key) { return "'" + std::string(key) + "'"; }

}  // namespace

MasterState::MasterState(const Options& options, std::unique_ptr<EvictionPolicy> policy,
                         StateListener* listener)
    : options_(options),
      policy_(std::move(policy)),
      listener_(listener),
      objects_(options.index_hugepages) {
  assert(policy_ != nullptr);
  assert(options_.stripe_size_bytes >= SegmentAllocator::kAlignmentBytes);
  policy_->UseFacts(&policy_facts_);
}

ObjectId MasterState::PolicyFacts::IdAt(uint32_t slot) const {
  return static_cast<ObjectId>(state_.slot_generations_[slot]) << 32 | slot;
}
uint64_t MasterState::PolicyFacts::KeyHashAt(uint32_t slot) const {
  return std::hash<std::string_view>()(state_.NodeAt(slot)->key());
}
uint64_t MasterState::PolicyFacts::SizeAt(uint32_t slot) const {
  return state_.NodeAt(slot)->record.size_bytes;
}

MasterState::~MasterState() {
  if (!bulk_unlinked_) return;
  for (uint32_t handle : slot_nodes_) {  // a load given up
    if (handle != 0) objects_.DeleteNode(objects_.NodeAt(handle));
  }
}

// ---- helpers -----------------------------------------------------------------

Status MasterState::CheckKey(std::string_view key) const {
  if (key.empty()) return Error(ErrorCode::INVALID_KEY, "empty key");
  if (key.size() > options_.max_key_bytes)
    return Error(ErrorCode::INVALID_PARAMS, "key of " + std::to_string(key.size()) +
                                                " bytes is longer than max_key_bytes " +
                                                std::to_string(options_.max_key_bytes));
  return Status::Ok();
}

ObjectId MasterState::IdOf(const ObjectRecord& rec) const {
  return static_cast<ObjectId>(slot_generations_[rec.slot]) << 32 | rec.slot;
}

MasterState::ObjectIt MasterState::FindById(ObjectId id) {
  const uint32_t slot = static_cast<uint32_t>(id);
  if (slot >= slot_nodes_.size() || slot_generations_[slot] != id >> 32) return objects_.end();
  return ObjectIt(NodeAt(slot));
}

MasterState::ObjectIt MasterState::InsertObject(std::string_view key,
                                                const ObjectIndex::Position* where,
                                                std::optional<uint64_t> key_hash) {
  ObjectIt it;
  if (bulk_loading_) {
    it = ObjectIt(key_hash ? objects_.NewNode(key, *key_hash) : objects_.NewNode(key));
  } else {
    it = objects_.insert(key, where);
  }
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    assert(slot_nodes_.size() < UINT32_MAX);
    slot = static_cast<uint32_t>(slot_nodes_.size());
    slot_nodes_.push_back(0);
    slot_generations_.push_back(0);
  }
  slot_nodes_[slot] = objects_.HandleOf(it.node());
  ++slot_generations_[slot];  // ids of earlier objects in this slot go stale
  it->record.slot = slot;
  return it;
}

void MasterState::FreeBuffers(const ObjectRecord& rec, uint64_t* largest_hole) {
  NoteStale(rec);
  const uint64_t* b = rec.buffers();
  for (uint32_t i = 0; i < rec.buffer_count; ++i) {
    Segment& seg = *segments_[BufferSegment(b[i])];
    const uint64_t size = BufferSize(rec, i);
    const uint64_t hole = seg.allocator.Free(BufferOffset(b[i]), size);
    allocated_bytes_ -= SegmentAllocator::AlignUp(size);
    if (largest_hole != nullptr) *largest_hole = std::max(*largest_hole, hole);
  }
}

// Frees the object's space and forgets it. `notify` tells the policy (false
// when the policy itself chose the victim and already dropped it).
void MasterState::EraseObject(ObjectIt it, RemoveReason reason, bool notify) {
  ObjectRecord& rec = it->record;
  if (!rec.complete()) ForgetPut(rec.slot, it->key());
  FreeBuffers(rec, nullptr);
  if (rec.complete() && notify) policy_->OnRemove(IdOf(rec));
  if (rec.has(ObjectRecord::kPinCounted)) --soft_pinned_count_;
  // The listener hears of it while the key still lives in the index, so
  // nothing is copied for it.
  if (listener_ != nullptr && rec.complete()) {
    listener_->OnObjectRemoved(it->key(), rec.listener_tag, reason);
  }
  if (!pending_upserts_.empty()) DiscardPendingUpsert(rec.slot);
  free_slots_.push_back(rec.slot);
  slot_nodes_[rec.slot] = 0;
  ++slot_generations_[rec.slot];
  objects_.erase(it);
}

uint32_t MasterState::Stripes(uint64_t size_bytes) const {
  return static_cast<uint32_t>((size_bytes + options_.stripe_size_bytes - 1) /
                               options_.stripe_size_bytes);
}

uint64_t MasterState::BufferSize(const ObjectRecord& rec, uint32_t index) const {
  const uint32_t stripes = Stripes(rec.size_bytes);
  const uint32_t stripe = index % stripes;
  return stripe + 1 < stripes ? options_.stripe_size_bytes
                              : rec.size_bytes - uint64_t{stripe} * options_.stripe_size_bytes;
}

std::vector<msg::ReplicaDesc> MasterState::DescribeReplicas(const ObjectRecord& rec) const {
  std::vector<msg::ReplicaDesc> out(rec.replicas);
  const uint32_t stripes = Stripes(rec.size_bytes);
  const uint64_t* b = rec.buffers();
  for (uint32_t i = 0; i < rec.buffer_count; ++i) {
    const Segment& seg = *segments_[BufferSegment(b[i])];
    msg::ReplicaDesc& r = out[i / stripes];
    r.status = rec.complete() ? msg::ReplicaStatus::kComplete : msg::ReplicaStatus::kProcessing;
    r.buffers.push_back(msg::BufferDesc{seg.desc.name, seg.desc.endpoint, seg.desc.shm_path,
                                          seg.desc.hostname, BufferOffset(b[i]),
                                          BufferSize(rec, i)});
  }
  return out;
}

// Not through DescribeReplicas: the journal dumps every committed object,
// and the descriptors' endpoint and path strings are not needed here.
ObjectDump MasterState::Dump(const ObjectIt& it) const {
  const ObjectRecord& rec = it->record;
  ObjectDump d{std::string(it->key()), rec.size_bytes, rec.complete(), rec.has(ObjectRecord::kSoftPin), {},
               rec.listener_tag};
  const uint32_t stripes = Stripes(rec.size_bytes);
  const uint64_t* b = rec.buffers();
  d.replicas.resize(rec.replicas);
  for (uint32_t i = 0; i < rec.buffer_count; ++i) {
    d.replicas[i / stripes].push_back(
        {segments_[BufferSegment(b[i])]->desc.name, BufferOffset(b[i]), BufferSize(rec, i)});
  }
  return d;
}

void MasterState::GrantLease(ObjectRecord& rec, uint64_t now_us, const msg::ClientId* reader) {
  assert(rec.complete());
  const uint64_t until = now_us + options_.default_kv_lease_ttl_us;
  if (!Leased(rec, now_us)) rec.set_readers(0);  // a new lease: no earlier read counts
  if (reader != nullptr && !held_keys_.empty()) CheckHeldReads(*reader, rec, now_us);
  if (reader != nullptr && rec.readers() != ObjectRecord::kReadersUnknown) {
    if (rec.readers() + 1 == ObjectRecord::kReadersUnknown || reads_.size() >= kMaxTrackedReads) {
      rec.set_readers(ObjectRecord::kReadersUnknown);
    } else {
      ReadGrant& g = reads_[ReadKey{*reader, IdOf(rec)}];
      // Left from an earlier lease of this client: whatever it counted in
      // the object stays counted, which can only keep the lease longer.
      if (g.deadline_us <= now_us) g.count = 0;
      ++g.count;
      g.deadline_us = until;
      rec.set_readers(static_cast<uint8_t>(rec.readers() + 1));
    }
  }
  rec.deadline_us = std::max(rec.deadline_us, until);
  if (rec.has(ObjectRecord::kPinCounted))  // reading a pinned object keeps it pinned
    rec.set_pin_expiry_us(
        std::max(rec.pin_expiry_us(), now_us + options_.default_kv_soft_pin_ttl_us));
  policy_->OnAccess(IdOf(rec));
}

bool MasterState::Leased(const ObjectRecord& rec, uint64_t now_us) const {
  return rec.complete() && rec.deadline_us > now_us;
}

bool MasterState::Pinned(const ObjectRecord& rec, uint64_t now_us) const {
  return rec.has(ObjectRecord::kPinCounted) && rec.pin_expiry_us() > now_us;
}

bool MasterState::OwnerAlive(const Segment& seg, uint64_t now_us) const {
  auto c = clients_.find(seg.owner);
  return c != clients_.end() && c->second.last_ping_us + options_.client_ttl_us >= now_us;
}

// ---- segments and clients --------------------------------------------------

Status MasterState::MountSegment(const msg::MountSegmentRequest& req, uint64_t now_us) {
  const msg::SegmentDesc& d = req.segment;
  auto fail = [&](ErrorCode code, std::string msg) {
    return Count(counters_.mount_segment, Error(code, std::move(msg)));
  };
  if (d.name.empty()) return fail(ErrorCode::INVALID_PARAMS, "segment name is empty");
  if (d.size_bytes < SegmentAllocator::kAlignmentBytes || d.size_bytes > kMaxAddressableSegmentBytes)
    return fail(ErrorCode::INVALID_PARAMS, "segment '" + d.name + "' size " +
                                               std::to_string(d.size_bytes) +
                                               " is outside [64 B, 64 TiB]");
  if (auto found = segment_ids_.find(d.name); found != segment_ids_.end()) {
    const Segment& seg = *segments_[found->second];
    if (seg.owner == req.client && seg.desc.incarnation == d.incarnation &&
        seg.desc.size_bytes == d.size_bytes) {
      Client& owner = clients_[req.client];
      owner.last_ping_us = now_us;
      owner.remount_pending = false;
      return Count(counters_.mount_segment, Status::Ok());  // a retried mount
    }
    if (seg.desc.incarnation == d.incarnation)
      return fail(ErrorCode::SEGMENT_ALREADY_EXISTS,
                  "segment '" + d.name + "' is already mounted by client " + ClientName(seg.owner));
    // A segment is named after its store's data endpoint, so a new
    // incarnation under the same name is that store restarted with its
    // memory lost: drop what the old incarnation held (never serve its stale
    // bytes) and mount the new one.
    DropSegments({found->second});
  }
  if (free_segment_ids_.empty() && segments_.size() >= kMaxSegmentIds)
    return fail(ErrorCode::INVALID_PARAMS, "too many segments to mount '" + d.name + "'");
  uint32_t id;
  if (!free_segment_ids_.empty()) {
    id = free_segment_ids_.back();
    free_segment_ids_.pop_back();
  } else {
    id = static_cast<uint32_t>(segments_.size());
    segments_.emplace_back();
  }
  segments_[id] = std::make_unique<Segment>(d, req.client);
  segment_ids_.emplace(d.name, id);
  Client& client = clients_[req.client];
  client.last_ping_us = now_us;
  client.remount_pending = false;
  client.segments.push_back(id);
  capacity_bytes_ += segments_[id]->allocator.capacity_bytes();
  ++view_version_;
  if (listener_ != nullptr) listener_->OnSegmentMounted(SegmentDump{d, req.client});
  return Count(counters_.mount_segment, Status::Ok());
}

Status MasterState::UnmountSegment(const msg::UnmountSegmentRequest& req, uint64_t now_us) {
  (void)now_us;
  auto found = segment_ids_.find(req.segment_name);
  if (found == segment_ids_.end())
    return Count(counters_.unmount_segment,
                 Error(ErrorCode::SEGMENT_NOT_FOUND,
                       "segment '" + req.segment_name + "' is not mounted"));
  if (!(segments_[found->second]->owner == req.client))
    return Count(counters_.unmount_segment,
                 Error(ErrorCode::ILLEGAL_CLIENT, "segment '" + req.segment_name +
                                                      "' belongs to another client, not " +
                                                      ClientName(req.client)));
  DropSegments({found->second});
  return Count(counters_.unmount_segment, Status::Ok());
}

msg::PingReply MasterState::Ping(const msg::PingRequest& req, uint64_t now_us) {
  auto [it, inserted] = clients_.try_emplace(req.client);
  it->second.last_ping_us = now_us;
  if (inserted) it->second.remount_pending = true;
  return Count(counters_.ping, msg::PingReply{it->second.remount_pending, view_version_}, false);
}

// ---- puts --------------------------------------------------------------------

Status MasterState::CheckPutShape(const msg::PutStartRequest& req) const {
  MC_RETURN_IF_ERROR(CheckKey(req.key));
  const uint32_t replicas = req.options.replicas;
  if (req.size_bytes == 0 || req.size_bytes > ObjectRecord::kMaxSizeBytes || replicas == 0 ||
      replicas > kMaxReplicas)
    return Error(ErrorCode::INVALID_PARAMS,
                 "put of " + Quoted(req.key) + ": size " + std::to_string(req.size_bytes) +
                     " and replicas " + std::to_string(replicas) +
                     " must be positive (size at most " +
                     std::to_string(ObjectRecord::kMaxSizeBytes) + ", replicas at most " +
                     std::to_string(kMaxReplicas) + ")");
  if (uint64_t{Stripes(req.size_bytes)} * replicas > kMaxBuffersPerObject)
    return Error(ErrorCode::INVALID_PARAMS,
                 "put of " + Quoted(req.key) + ": " + std::to_string(req.size_bytes) +
                     " bytes x " + std::to_string(replicas) + " replicas needs more than " +
                     std::to_string(kMaxBuffersPerObject) + " stripes");
  return Status::Ok();
}

void MasterState::SetNewVersion(ObjectRecord& rec, const msg::PutStartRequest& req,
                                const std::vector<uint64_t>& placed, uint64_t now_us) {
  rec.size_bytes = req.size_bytes;
  rec.replicas = static_cast<uint8_t>(req.options.replicas);
  const msg::PutPlacement& want = req.options.placement;
  // A hard pin is a soft pin that never expires and that eviction skips.
  rec.flags = req.options.soft_pin || want.hard_pin ? ObjectRecord::kSoftPin : 0;
  rec.set_pin_expiry_us(want.hard_pin ? ObjectRecord::kHardPin
                        : want.soft_pin_ttl_ms > 0
                            ? std::min<uint64_t>(want.soft_pin_ttl_ms, UINT64_MAX / 2000) * 1000
                            : 0);
  rec.deadline_us = now_us + options_.put_timeout_us;
  rec.SetBuffers(placed.data(), static_cast<uint32_t>(placed.size()));
}

msg::PutStartReply MasterState::InsertPut(const msg::PutStartRequest& req,
                                          const std::vector<uint64_t>& placed, uint64_t now_us,
                                          const ObjectIndex::Position* where) {
  ObjectIt it = InsertObject(req.key, where);
  ObjectRecord& rec = it->record;
  SetNewVersion(rec, req, placed, now_us);
  put_owners_[rec.slot] = req.client;
  put_slots_.emplace(std::hash<std::string_view>()(req.key), rec.slot);
  put_deadlines_.push_back({rec.deadline_us, IdOf(rec)});
  std::push_heap(put_deadlines_.begin(), put_deadlines_.end(), std::greater<>());
  return msg::PutStartReply{DescribeReplicas(rec)};
}

Result<msg::PutStartReply> MasterState::PutStart(const msg::PutStartRequest& req,
                                                   uint64_t now_us) {
  auto fail = [&](Status s) {
    return Count(counters_.put_start, Result<msg::PutStartReply>(std::move(s)));
  };
  if (Status s = CheckPutShape(req); !s.ok()) return fail(std::move(s));
  ObjectIndex::Position where;  // the insert's, unless placing evicts
  if (objects_.find(req.key, &where) != objects_.end())
    return fail(Error(ErrorCode::OBJECT_ALREADY_EXISTS, "key " + Quoted(req.key) + " exists"));
  auto placed = PlaceOrEvict(req.key, req.size_bytes, req.options.replicas, now_us,
                             req.options.placement);
  if (!placed.ok()) return fail(placed.status());
  if (!superseded_.empty()) (void)TakeSuperseded(req.key, req.client, now_us);  // writes anew
  return Count(counters_.put_start,
               Result<msg::PutStartReply>(InsertPut(req, *placed, now_us, &where)));
}

MasterState::ObjectIt MasterState::FindPut(std::string_view key) const {
  if (auto p = put_slots_.find(std::hash<std::string_view>()(key)); p != put_slots_.end()) {
    ObjectIndex::Node* n = NodeAt(p->second);
    if (n->key() == key) return ObjectIt(n);
  }
  return objects_.find(key);
}

void MasterState::ForgetPut(uint32_t slot, std::string_view key) {
  put_owners_.erase(slot);
  auto p = put_slots_.find(std::hash<std::string_view>()(key));
  if (p != put_slots_.end() && p->second == slot) put_slots_.erase(p);
}

Status MasterState::DoPutEnd(const msg::KeyRequest& req, uint64_t now_us) {
  auto it = FindPut(req.key);
  if (it == objects_.end())
    return Error(ErrorCode::OBJECT_NOT_FOUND,
                 "put of " + Quoted(req.key) + " is unknown (revoked, timed out or lost)");
  ObjectRecord& rec = it->record;
  if (rec.complete()) {
    // An upsert's new version becomes the object; a retried end changes
    // nothing; one of an upsert a later one took over fails.
    if (EndPendingUpsert(it, req, now_us)) return Status::Ok();
    if (!superseded_.empty() && IsSuperseded(req.key, req.client, now_us))
      return Error(ErrorCode::INVALID_WRITE, "the upsert of " + Quoted(req.key) +
                                                 " was superseded by a later one of another client");
    return Status::Ok();
  }
  MC_RETURN_IF_ERROR(CheckPutOwner(rec, req, "end"));
  ForgetPut(rec.slot, it->key());
  Complete(it, now_us);
  return Status::Ok();
}

void MasterState::Complete(ObjectIt it, uint64_t now_us) {
  ObjectRecord& rec = it->record;
  rec.flags |= ObjectRecord::kComplete;
  rec.deadline_us = 0;  // no lease yet
  if (rec.has(ObjectRecord::kSoftPin)) {
    rec.flags |= ObjectRecord::kPinCounted;
    const uint64_t ttl_us = rec.pin_expiry_us() ? rec.pin_expiry_us() : options_.default_kv_soft_pin_ttl_us;
    rec.set_pin_expiry_us(ttl_us == ObjectRecord::kHardPin ? ttl_us : now_us + ttl_us);
    ++soft_pinned_count_;
    pin_expiries_.push_back({rec.pin_expiry_us(), IdOf(rec)});
    std::push_heap(pin_expiries_.begin(), pin_expiries_.end(), std::greater<>());
  }
  policy_->OnInsert(IdOf(rec), std::hash<std::string_view>()(it->key()), rec.size_bytes);
  if (listener_ != nullptr) rec.listener_tag = listener_->OnObjectCommitted(Dump(it));
}

Status MasterState::CheckPutOwner(const ObjectRecord& rec, const msg::KeyRequest& req,
                                  const char* what) const {
  auto owner = put_owners_.find(rec.slot);
  if (owner == put_owners_.end() || owner->second == req.client) return Status::Ok();
  // Another client ending or revoking it would let readers see, or the
  // allocator reuse, bytes its writer is still moving.
  return Error(ErrorCode::INVALID_WRITE, "cannot " + std::string(what) + " the put of " +
                                             Quoted(req.key) + ": another client started it");
}

Status MasterState::PutEnd(const msg::KeyRequest& req, uint64_t now_us) {
  return Count(counters_.put_end, DoPutEnd(req, now_us));
}

Status MasterState::DoPutRevoke(const msg::KeyRequest& req, uint64_t now_us) {
  (void)now_us;
  auto it = FindPut(req.key);
  if (it == objects_.end())
    return Error(ErrorCode::OBJECT_NOT_FOUND, "put of " + Quoted(req.key) + " is unknown");
  if (it->record.complete()) {
    if (RevokePendingUpsert(it, req)) return Status::Ok();
    return Error(ErrorCode::INVALID_WRITE,
                 "put of " + Quoted(req.key) + " already ended; remove the key instead");
  }
  MC_RETURN_IF_ERROR(CheckPutOwner(it->record, req, "revoke"));
  EraseObject(it, RemoveReason::kRemoved, false);
  return Status::Ok();
}

Status MasterState::PutRevoke(const msg::KeyRequest& req, uint64_t now_us) {
  return Count(counters_.put_revoke, DoPutRevoke(req, now_us));
}

// ---- reads -------------------------------------------------------------------

Result<msg::GetReplicaListReply> MasterState::GetReplicaList(const msg::KeyRequest& req,
                                                               uint64_t now_us) {
  using R = Result<msg::GetReplicaListReply>;
  auto it = objects_.find(req.key);
  if (it == objects_.end()) {
    policy_->OnMiss(std::hash<std::string_view>()(req.key));
    return Count(counters_.get_replica_list,
                 R(Error(ErrorCode::OBJECT_NOT_FOUND, "key " + Quoted(req.key) + " not found")));
  }
  ObjectRecord& rec = it->record;
  if (!rec.complete())
    return Count(counters_.get_replica_list,
                 R(Error(ErrorCode::REPLICA_IS_NOT_READY,
                         "key " + Quoted(req.key) + " is still being written")));
  GrantLease(rec, now_us, &req.client);
  return Count(counters_.get_replica_list,
               R(msg::GetReplicaListReply{DescribeReplicas(rec), rec.size_bytes,
                                            options_.default_kv_lease_ttl_us, IdOf(rec)}));
}

Result<bool> MasterState::ExistKey(const msg::KeyRequest& req, uint64_t now_us) {
  auto it = objects_.find(req.key);
  if (it == objects_.end()) policy_->OnMiss(std::hash<std::string_view>()(req.key));
  if (it == objects_.end() || !it->record.complete())
    return Count(counters_.exist_key, Result<bool>(false));
  GrantLease(it->record, now_us, nullptr);
  return Count(counters_.exist_key, Result<bool>(true));
}

void MasterState::ReleaseLeases(const std::vector<msg::KeyRequest>& reqs, uint64_t now_us) {
  for (const msg::KeyRequest& req : reqs) {
    auto it = objects_.find(req.key);
    auto g = it == objects_.end() || !it->record.complete()
                 ? reads_.end()
                 : reads_.find(ReadKey{req.client, IdOf(it->record)});
    if (g == reads_.end()) {  // perhaps a read of a version removed or replaced since
      if (!held_keys_.empty()) ReleaseHeld(req, now_us);
      continue;
    }
    ObjectRecord& rec = it->record;
    // Within its own lease, this read is still counted in the object: the
    // lease has not lapsed since (it outlasts every grant), so no newer
    // lease reset the count. Past it, it may not be.
    const bool counted = g->second.deadline_us > now_us;
    if (!counted || --g->second.count == 0) reads_.erase(g);
    const uint8_t readers = rec.readers();
    if (!counted || readers == 0 || readers == ObjectRecord::kReadersUnknown) continue;
    ++counters_.released_reads;
    rec.set_readers(static_cast<uint8_t>(readers - 1));
    if (readers == 1) {  // the last read is done: the lease ends
      rec.deadline_us = now_us;
      ++counters_.leases_ended_by_release;
    }
  }
}

void MasterState::SweepReads(uint64_t now_us) {
  if (reads_.empty()) return;
  const size_t buckets = reads_.bucket_count();
  const size_t budget = std::max<size_t>(64, buckets / 32);  // all of them every 32 ticks
  std::vector<ReadKey> expired;
  for (size_t n = 0; n < budget && n < buckets; ++n) {
    const size_t b = read_sweep_bucket_++ % buckets;
    for (auto it = reads_.begin(b); it != reads_.end(b); ++it) {
      if (it->second.deadline_us <= now_us) expired.push_back(it->first);
    }
  }
  for (const ReadKey& k : expired) reads_.erase(k);
}

// ---- removal -----------------------------------------------------------------

Status MasterState::Remove(const msg::RemoveRequest& req, uint64_t now_us) {
  auto it = objects_.find(req.key);
  if (it == objects_.end())
    return Count(counters_.remove,
                 Error(ErrorCode::OBJECT_NOT_FOUND, "key " + Quoted(req.key) + " not found"));
  if (!it->record.complete())  // its writer still holds the buffers: revoke instead
    return Count(counters_.remove, Error(ErrorCode::REPLICA_IS_NOT_READY,
                                         "key " + Quoted(req.key) + " is still being written"));
  if (Leased(it->record, now_us) && !req.force)
    return Count(counters_.remove,
                 Error(ErrorCode::OBJECT_HAS_LEASE,
                       "key " + Quoted(req.key) + " is leased for another " +
                           std::to_string((it->record.deadline_us - now_us) / 1000) + " ms"));
  // Forced past a lease: its readers' grants live until the lease ends, so
  // its space is not handed out before (RetireObject frees it at once when
  // unleased).
  RetireObject(it, RemoveReason::kRemoved, now_us);
  return Count(counters_.remove, Status::Ok());
}

msg::RemoveAllReply MasterState::RemoveAll(uint64_t now_us, bool force) {
  msg::RemoveAllReply reply;
  for (auto it = objects_.begin(); it != objects_.end();) {
    auto next = std::next(it);
    if (it->record.complete() && (force || !Leased(it->record, now_us))) {
      RetireObject(it, RemoveReason::kRemoved, now_us);  // as in Remove
      ++reply.removed;
    }
    it = next;
  }
  return Count(counters_.remove_all, reply, false);
}

// ---- listing and status ------------------------------------------------------

Result<msg::ListKeysReply> MasterState::ListKeys(const msg::ListKeysRequest& req,
                                                   uint64_t now_us) {
  (void)now_us;
  if (req.limit == 0)
    return Count(counters_.list_keys,
                 Result<msg::ListKeysReply>(Error(ErrorCode::INVALID_PARAMS, "limit is 0")));
  const uint32_t limit = std::min(req.limit, options_.max_batch);
  msg::ListKeysReply reply;
  // The map is ordered by key, so a cursor (the last key returned) resumes
  // exactly after itself however the map changed in between.
  auto it = req.cursor.empty() || req.cursor < req.prefix ? objects_.lower_bound(req.prefix)
                                                          : objects_.upper_bound(req.cursor);
  for (; it != objects_.end(); ++it) {
    if (it->key().compare(0, req.prefix.size(), req.prefix) != 0) break;
    if (!it->record.complete()) continue;
    if (reply.keys.size() == limit) {
      reply.next_cursor = reply.keys.back().key;
      break;
    }
    const ObjectRecord& rec = it->record;
    reply.keys.push_back(msg::KeyInfo{std::string(it->key()), rec.size_bytes, rec.replicas,
                                        rec.has(ObjectRecord::kPinCounted)});
  }
  return Count(counters_.list_keys, Result<msg::ListKeysReply>(std::move(reply)));
}

msg::ClusterStatusReply MasterState::ClusterStatus(uint64_t now_us) const {
  (void)now_us;
  msg::ClusterStatusReply r;
  r.capacity_bytes = capacity_bytes_;
  r.used_bytes = allocated_bytes_;
  r.key_count = objects_.size();
  r.soft_pinned_count = soft_pinned_count_;
  r.active_clients = clients_.size();
  for (const auto& [name, id] : segment_ids_) {
    const Segment& seg = *segments_[id];
    r.segments.push_back(msg::SegmentStatus{name, seg.desc.endpoint,
                                              seg.allocator.capacity_bytes(),
                                              seg.allocator.used_bytes()});
  }
  return r;
}

MasterCounters MasterState::counters() const {
  MasterCounters c = counters_;
  c.allocated_bytes = allocated_bytes_;
  c.capacity_bytes = capacity_bytes_;
  c.key_count = objects_.size();
  c.soft_pinned_count = soft_pinned_count_;
  c.active_clients = clients_.size();
  c.segment_count = segment_ids_.size();
  const EvictionStats e = policy_->stats();
  c.victims_by_recency = e.victims_by_recency;
  c.eviction_mode_switches = e.mode_switches;
  return c;
}

}  // namespace mc::master

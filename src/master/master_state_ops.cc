// MasterState: upserts, retired buffers, copy/move tasks, clearing replicas
// and removal by regular expression.
//
// Why readers are safe: a reader may touch a buffer only under a lease (its
// read grant expires with it), and a writer only before its put's deadline
// (its write grant expires then). So a buffer an operation takes away from an
// object is not freed at once but retired until the last of those ends:
// the old version of an upserted object until its lease ends, the buffers of
// a superseded or timed-out writer until its deadline.
#include <algorithm>
#include <functional>
#include <regex>

#include "master/master_state.h"
#include "master/master_state_internal.h"

namespace mc::master {

namespace {

std::string Quoted(std::string_view key) { return "'" + std::string(key) + "'"; }

// Tasks kept, running and finished; the oldest finished ones go first.
constexpr size_t kMaxTasks = 10000;
constexpr size_t kMaxRegexBytes = 4096;

bool Finished(msg::TaskStatus s) {
  return s == msg::TaskStatus::kFailed || s == msg::TaskStatus::kSuccess;
}

}  // namespace

// ---- retired buffers -------------------------------------------------------

uint64_t MasterState::retired_bytes() const { return retired_bytes_; }

void MasterState::RetireBuffers(const ObjectRecord& rec, uint64_t free_at_us, uint64_t now_us,
                                const std::vector<bool>* dropping) {
  const uint64_t* b = rec.buffers();
  for (uint32_t i = 0; i < rec.buffer_count; ++i) {
    const uint32_t seg = BufferSegment(b[i]);
    if (dropping != nullptr && (*dropping)[seg]) continue;  // leaves with its segment
    const uint64_t size = BufferSize(rec, i);
    NoteStale(seg, BufferOffset(b[i]), size);
    if (free_at_us <= now_us) {
      segments_[seg]->allocator.Free(BufferOffset(b[i]), size);
      allocated_bytes_ -= SegmentAllocator::AlignUp(size);
      continue;
    }
    retired_.push_back({free_at_us, seg, BufferOffset(b[i]), size});
    std::push_heap(retired_.begin(), retired_.end(), std::greater<>());
    retired_bytes_ += SegmentAllocator::AlignUp(size);
  }
}

void MasterState::FreeRetired(uint64_t now_us) {
  while (!retired_.empty() && retired_.front().free_at_us <= now_us) {
    std::pop_heap(retired_.begin(), retired_.end(), std::greater<>());
    const Retired r = retired_.back();
    retired_.pop_back();
    if (r.held != 0) {
      FreeHeld(r.held);  // its lease ended before all its reads were released
      continue;
    }
    segments_[r.segment]->allocator.Free(r.offset, r.size_bytes);
    allocated_bytes_ -= SegmentAllocator::AlignUp(r.size_bytes);
    retired_bytes_ -= SegmentAllocator::AlignUp(r.size_bytes);
  }
}

void MasterState::RetireObject(ObjectIt it, RemoveReason reason, uint64_t now_us) {
  ObjectRecord& rec = it->record;
  if (!HoldForReaders(rec, it->key(), now_us))
    RetireBuffers(rec, Leased(rec, now_us) ? rec.deadline_us : now_us, now_us);
  rec.SetBuffers(nullptr, 0);
  EraseObject(it, reason, true);
}

void MasterState::DropPendingOn(const std::vector<bool>& dropping) {
  const size_t before = retired_.size();
  DropHeldOn(dropping);
  if (!quarantine_.empty()) DropQuarantineOn(dropping);
  std::erase_if(retired_, [&](const Retired& r) {
    if (r.held != 0 || !dropping[r.segment]) return false;
    retired_bytes_ -= SegmentAllocator::AlignUp(r.size_bytes);
    return true;
  });
  if (retired_.size() != before) std::make_heap(retired_.begin(), retired_.end(), std::greater<>());
  auto touches = [&](const ObjectRecord& rec) {
    const uint64_t* b = rec.buffers();
    for (uint32_t i = 0; i < rec.buffer_count; ++i)
      if (dropping[BufferSegment(b[i])]) return true;
    return false;
  };
  // A version or a copy that lost a buffer can never be whole: give it up.
  // Its other buffers wait for the writer's grants to expire (now = 0: never
  // freed here, Tick frees them).
  for (auto p = pending_upserts_.begin(); p != pending_upserts_.end();) {
    if (!touches(p->second->rec)) {
      ++p;
      continue;
    }
    RetireBuffers(p->second->rec, p->second->rec.deadline_us, 0, &dropping);
    p->second->rec.SetBuffers(nullptr, 0);
    p = pending_upserts_.erase(p);
  }
  for (auto& [id, task] : tasks_) {
    if (task->placed.buffer_count == 0 || !touches(task->placed)) continue;
    RetireBuffers(task->placed, task->deadline_us, 0, &dropping);
    task->placed.SetBuffers(nullptr, 0);
    task->info.status = static_cast<uint8_t>(msg::TaskStatus::kFailed);
    task->info.message = "a target segment was unmounted during the copy";
  }
}

// ---- upserts -----------------------------------------------------------------

Result<msg::PutStartReply> MasterState::UpsertStart(const msg::PutStartRequest& req,
                                                      uint64_t now_us) {
  MC_RETURN_IF_ERROR(CheckPutShape(req));
  if (!superseded_.empty()) (void)TakeSuperseded(req.key, req.client, now_us);  // writes anew
  auto it = objects_.find(req.key);
  if (it != objects_.end() && it->record.complete()) return UpsertExisting(it, req, now_us);
  if (it != objects_.end()) {
    // Taken from its writer, whose buffers stay allocated until its write
    // grants expire at its deadline; its PutEnd then fails.
    ObjectRecord& rec = it->record;
    if (auto owner = put_owners_.find(rec.slot); owner != put_owners_.end())
      NoteSuperseded(req.key, owner->second, req.client, rec.deadline_us);
    RetireBuffers(rec, rec.deadline_us, now_us);
    rec.SetBuffers(nullptr, 0);
    EraseObject(it, RemoveReason::kRemoved, false);
  }
  return PutStart(req, now_us);
}

Result<msg::PutStartReply> MasterState::UpsertExisting(ObjectIt it,
                                                       const msg::PutStartRequest& req,
                                                       uint64_t now_us) {
  const bool was_pinned = it->record.has(ObjectRecord::kSoftPin);
  const bool was_hard = was_pinned && it->record.pin_expiry_us() == ObjectRecord::kHardPin;
  auto placed = PlaceOrEvict(req.key, req.size_bytes, req.options.replicas, now_us,
                             req.options.placement);
  if (!placed.ok()) return placed.status();
  it = objects_.find(req.key);  // placing may have evicted the old version
  if (it == objects_.end()) return InsertPut(req, *placed, now_us);
  // An earlier upsert not ended: superseded, and its writer's PutEnd fails.
  if (auto p = pending_upserts_.find(it->record.slot); p != pending_upserts_.end())
    NoteSuperseded(req.key, p->second->owner, req.client, p->second->rec.deadline_us);
  DiscardPendingUpsert(it->record.slot);
  auto pending = std::make_unique<Pending>();
  pending->owner = req.client;
  SetNewVersion(pending->rec, req, *placed, now_us);
  // An upsert keeps the object's protection from eviction (as the
  // reference's does when it reallocates).
  if (was_pinned) pending->rec.flags |= ObjectRecord::kSoftPin;
  if (was_hard) pending->rec.set_pin_expiry_us(ObjectRecord::kHardPin);
  msg::PutStartReply reply{DescribeReplicas(pending->rec)};
  pending_upserts_[it->record.slot] = std::move(pending);
  return reply;
}

Result<std::vector<msg::BatchItem<msg::PutStartReply>>> MasterState::BatchUpsertStart(
    const std::vector<msg::PutStartRequest>& reqs, uint64_t now_us) {
  if (reqs.size() > options_.max_batch)
    return Error(ErrorCode::INVALID_PARAMS, "batch of " + std::to_string(reqs.size()) +
                                                " items is longer than max_batch " +
                                                std::to_string(options_.max_batch));
  std::vector<msg::BatchItem<msg::PutStartReply>> out(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    auto r = UpsertStart(reqs[i], now_us);
    if (r.ok()) {
      out[i].value = std::move(r).value();
    } else {
      out[i].status = r.status();
    }
  }
  return out;
}

bool MasterState::EndPendingUpsert(ObjectIt it, const msg::KeyRequest& req, uint64_t now_us) {
  ObjectRecord& rec = it->record;
  auto p = pending_upserts_.find(rec.slot);
  if (p == pending_upserts_.end() || !(p->second->owner == req.client)) return false;
  const std::unique_ptr<Pending> next = std::move(p->second);
  pending_upserts_.erase(p);
  // The old version's readers keep its buffers until their lease ends.
  const bool leased = Leased(rec, now_us);
  const uint64_t old_deadline = rec.deadline_us;
  const bool reads_out = leased && rec.readers() != 0;
  if (!HoldForReaders(rec, it->key(), now_us))
    RetireBuffers(rec, leased ? old_deadline : now_us, now_us);
  policy_->OnRemove(IdOf(rec));
  if (rec.has(ObjectRecord::kPinCounted)) --soft_pinned_count_;
  // A new ObjectId: the old version's lease, reads, timers and tasks no
  // longer match this object.
  ++slot_generations_[rec.slot];
  rec.SetBuffers(next->rec.buffers(), next->rec.buffer_count);
  rec.size_bytes = next->rec.size_bytes;
  rec.replicas = next->rec.replicas;
  rec.flags = next->rec.flags & ObjectRecord::kSoftPin;  // no readers yet
  rec.set_pin_expiry_us(next->rec.pin_expiry_us());
  Complete(it, now_us);
  if (reads_out) {
    // A release names only the key, so one of an old version's read could
    // end a lease on the new version that a read of the same client holds.
    // Until the old reads' lease is over the new version's lease ends by
    // time alone.
    rec.deadline_us = old_deadline;
    rec.set_readers(ObjectRecord::kReadersUnknown);
  }
  return true;
}

bool MasterState::RevokePendingUpsert(ObjectIt it, const msg::KeyRequest& req) {
  auto p = pending_upserts_.find(it->record.slot);
  if (p == pending_upserts_.end() || !(p->second->owner == req.client)) return false;
  FreeBuffers(p->second->rec, nullptr);  // its writer is done with them
  p->second->rec.SetBuffers(nullptr, 0);
  pending_upserts_.erase(p);
  return true;
}

void MasterState::DiscardPendingUpsert(uint32_t slot) {
  auto p = pending_upserts_.find(slot);
  if (p == pending_upserts_.end()) return;
  RetireBuffers(p->second->rec, p->second->rec.deadline_us, 0);
  p->second->rec.SetBuffers(nullptr, 0);
  pending_upserts_.erase(p);
}

// ---- copy and move tasks -----------------------------------------------------

Result<msg::TaskId> MasterState::CreateCopyTask(const msg::CreateCopyTaskRequest& req,
                                                uint64_t now_us, uint64_t unix_ms) {
  MC_RETURN_IF_ERROR(CheckKey(req.key));
  if (req.targets.empty() || req.targets.size() > kMaxReplicas)
    return Error(ErrorCode::INVALID_PARAMS, "copy of " + Quoted(req.key) + ": " +
                                                std::to_string(req.targets.size()) +
                                                " targets (1 to " +
                                                std::to_string(kMaxReplicas) + ")");
  auto it = objects_.find(req.key);
  if (it == objects_.end() || !it->record.complete())
    return Error(ErrorCode::OBJECT_NOT_FOUND, "key " + Quoted(req.key) + " not found");
  for (const std::string& t : req.targets) {
    auto found = segment_ids_.find(t);
    if (found == segment_ids_.end())
      return Error(ErrorCode::INVALID_PARAMS, "target segment '" + t + "' is not mounted");
    if (!OwnerAlive(*segments_[found->second], now_us))
      return Error(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                   "target segment '" + t + "' belongs to a client that stopped pinging");
  }
  return AddTask(msg::TaskType::kReplicaCopy, it, req.client, "", req.targets, now_us, unix_ms);
}

Result<msg::TaskId> MasterState::CreateMoveTask(const msg::CreateMoveTaskRequest& req,
                                                uint64_t now_us, uint64_t unix_ms) {
  MC_RETURN_IF_ERROR(CheckKey(req.key));
  auto it = objects_.find(req.key);
  if (it == objects_.end() || !it->record.complete())
    return Error(ErrorCode::OBJECT_NOT_FOUND, "key " + Quoted(req.key) + " not found");
  if (req.source == req.target)
    return Error(ErrorCode::INVALID_PARAMS, "move of " + Quoted(req.key) +
                                                ": source and target are both '" +
                                                req.source + "'");
  auto target = segment_ids_.find(req.target);
  if (target == segment_ids_.end())
    return Error(ErrorCode::INVALID_PARAMS, "target segment '" + req.target + "' is not mounted");
  if (!OwnerAlive(*segments_[target->second], now_us))
    return Error(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                 "target segment '" + req.target + "' belongs to a client that stopped pinging");
  auto source = segment_ids_.find(req.source);
  bool held = false;
  const uint64_t* b = it->record.buffers();
  for (uint32_t i = 0; source != segment_ids_.end() && i < it->record.buffer_count; ++i)
    held |= BufferSegment(b[i]) == source->second;
  if (!held)
    return Error(ErrorCode::INVALID_PARAMS,
                 "key " + Quoted(req.key) + " has no replica on segment '" + req.source + "'");
  return AddTask(msg::TaskType::kReplicaMove, it, req.client, req.source, {req.target}, now_us,
                 unix_ms);
}

Result<msg::TaskId> MasterState::AddTask(msg::TaskType type, ObjectIt it,
                                         const msg::ClientId& client, std::string source,
                                         std::vector<std::string> targets, uint64_t now_us,
                                         uint64_t unix_ms) {
  for (auto t = tasks_.begin(); tasks_.size() >= kMaxTasks && t != tasks_.end();) {
    t = Finished(t->second->info.task_status()) ? tasks_.erase(t) : std::next(t);
  }
  if (tasks_.size() >= kMaxTasks)
    return Error(ErrorCode::TASK_PENDING_LIMIT_EXCEEDED,
                 std::to_string(kMaxTasks) + " copy/move tasks are running");
  auto task = std::make_unique<Task>();
  task->info.id = msg::TaskId{options_.task_id_seed, ++next_task_};
  task->info.type = static_cast<uint8_t>(type);
  task->info.status = static_cast<uint8_t>(msg::TaskStatus::kPending);
  task->info.created_unix_ms = unix_ms;
  task->info.updated_unix_ms = unix_ms;
  task->info.assigned_client = client;
  task->info.key = std::string(it->key());
  task->object = IdOf(it->record);
  task->source = std::move(source);
  task->targets = std::move(targets);
  task->created_us = now_us;
  task->deadline_us = now_us + options_.put_timeout_us;
  const msg::TaskId id = task->info.id;
  tasks_.emplace(id, std::move(task));
  return id;
}

Result<msg::TaskInfo> MasterState::QueryTask(const msg::TaskRequest& req, uint64_t now_us) const {
  (void)now_us;
  auto t = tasks_.find(req.task);
  if (t == tasks_.end())
    return Error(ErrorCode::TASK_NOT_FOUND, "no copy/move task has this id");
  return t->second->info;
}

Result<std::vector<uint64_t>> MasterState::PlaceOn(uint32_t segment, uint64_t size_bytes) {
  const uint32_t stripes = Stripes(size_bytes);
  std::vector<uint64_t> packed;
  for (uint32_t s = 0; s < stripes; ++s) {
    const uint64_t piece = s + 1 < stripes ? options_.stripe_size_bytes
                                           : size_bytes - uint64_t{s} * options_.stripe_size_bytes;
    auto off = segments_[segment]->allocator.Allocate(piece);
    if (!off) {
      for (uint32_t k = 0; k < packed.size(); ++k) {
        segments_[segment]->allocator.Free(BufferOffset(packed[k]), options_.stripe_size_bytes);
        allocated_bytes_ -= SegmentAllocator::AlignUp(options_.stripe_size_bytes);
      }
      return Error(ErrorCode::NO_AVAILABLE_HANDLE,
                   "segment '" + segments_[segment]->desc.name + "' has no room for " +
                       std::to_string(size_bytes) + " bytes");
    }
    packed.push_back(PackBuffer(segment, *off));
    allocated_bytes_ += SegmentAllocator::AlignUp(piece);
  }
  return packed;
}

Result<msg::TaskStartReply> MasterState::TaskStart(const msg::TaskRequest& req, uint64_t now_us) {
  auto t = tasks_.find(req.task);
  if (t == tasks_.end()) return Error(ErrorCode::TASK_NOT_FOUND, "no copy/move task has this id");
  Task& task = *t->second;
  if (!(task.info.assigned_client == req.client) || task.info.task_status() != msg::TaskStatus::kPending)
    return Error(ErrorCode::INVALID_PARAMS, "the task is not pending for this client");
  auto it = FindById(task.object);
  if (it == objects_.end()) {
    FailTask(task, "key " + Quoted(task.info.key) + " was removed or replaced", now_us);
    return Error(ErrorCode::OBJECT_NOT_FOUND, task.info.message);
  }
  ObjectRecord& rec = it->record;
  const uint32_t stripes = Stripes(rec.size_bytes);
  std::vector<uint64_t> placed;
  uint32_t added = 0;
  for (const std::string& name : task.targets) {
    auto seg = segment_ids_.find(name);
    if (seg == segment_ids_.end()) {
      FailTask(task, "target segment '" + name + "' is no longer mounted", now_us);
      break;
    }
    bool held = false;  // a target holding a replica already needs no copy
    for (uint32_t r = 0; r < rec.replicas; ++r)
      held |= BufferSegment(rec.buffers()[r * stripes]) == seg->second;
    if (held) continue;
    auto more = PlaceOn(seg->second, rec.size_bytes);
    if (!more.ok()) {
      FailTask(task, more.status().message(), now_us);
      break;
    }
    placed.insert(placed.end(), more->begin(), more->end());
    ++added;
  }
  task.placed.size_bytes = rec.size_bytes;
  task.placed.replicas = static_cast<uint8_t>(added);
  task.placed.SetBuffers(placed.data(), static_cast<uint32_t>(placed.size()));
  if (task.info.task_status() == msg::TaskStatus::kFailed) {
    FreeBuffers(task.placed, nullptr);
    task.placed.SetBuffers(nullptr, 0);
    return Error(ErrorCode::NO_AVAILABLE_HANDLE, task.info.message);
  }
  // The source: the replica being moved, or for a copy the first one.
  uint32_t src = 0;
  for (uint32_t r = 0; r < rec.replicas; ++r) {
    if (segments_[BufferSegment(rec.buffers()[r * stripes])]->desc.name == task.source) src = r;
  }
  GrantLease(rec, now_us, &req.client);
  task.info.status = static_cast<uint8_t>(msg::TaskStatus::kProcessing);
  task.deadline_us = now_us + options_.put_timeout_us;
  task.Touch(now_us);
  msg::TaskStartReply reply;
  reply.key = task.info.key;
  reply.size_bytes = rec.size_bytes;
  reply.lease_ttl_us = options_.default_kv_lease_ttl_us;
  reply.source = DescribeReplicas(rec)[src];
  reply.targets = DescribeReplicas(task.placed);
  return reply;
}

void MasterState::FailTask(Task& task, std::string why, uint64_t now_us) {
  task.info.status = static_cast<uint8_t>(msg::TaskStatus::kFailed);
  task.info.message = std::move(why);
  task.Touch(std::max(now_us, task.created_us));
}

Status MasterState::TaskEnd(const msg::TaskEndRequest& req, uint64_t now_us) {
  auto t = tasks_.find(req.task);
  if (t == tasks_.end()) return Error(ErrorCode::TASK_NOT_FOUND, "no copy/move task has this id");
  Task& task = *t->second;
  if (!(task.info.assigned_client == req.client) ||
      task.info.task_status() != msg::TaskStatus::kProcessing)
    return Error(ErrorCode::INVALID_PARAMS, "the task is not running for this client");
  if (!req.ok) {
    FreeBuffers(task.placed, nullptr);  // its writer is done with them
    task.placed.SetBuffers(nullptr, 0);
    FailTask(task, req.message.empty() ? "the copy failed" : req.message, now_us);
    return Status::Ok();
  }
  return FinishTask(task, now_us);
}

Status MasterState::FinishTask(Task& task, uint64_t now_us) {
  auto it = FindById(task.object);
  ObjectRecord& placed = task.placed;
  const bool fits = it != objects_.end() &&
                    it->record.replicas + placed.replicas <= kMaxReplicas &&
                    it->record.buffer_count + placed.buffer_count <= kMaxBuffersPerObject;
  if (!fits) {
    FreeBuffers(placed, nullptr);
    placed.SetBuffers(nullptr, 0);
    FailTask(task, it == objects_.end()
                       ? "key " + Quoted(task.info.key) + " was removed or replaced during the copy"
                       : "key " + Quoted(task.info.key) + " would exceed its replica limit",
             now_us);
    return Error(ErrorCode::OBJECT_NOT_FOUND, task.info.message);
  }
  ObjectRecord& rec = it->record;
  const uint32_t stripes = Stripes(rec.size_bytes);
  std::vector<uint64_t> kept(rec.buffers(), rec.buffers() + rec.buffer_count);
  if (task.info.type == static_cast<uint8_t>(msg::TaskType::kReplicaMove)) {
    // The source replica leaves; its readers keep it until their lease ends.
    auto source = segment_ids_.find(task.source);
    for (uint32_t r = 0; source != segment_ids_.end() && r < rec.replicas; ++r) {
      if (BufferSegment(kept[r * stripes]) != source->second) continue;
      ObjectRecord gone;
      gone.size_bytes = rec.size_bytes;
      gone.replicas = 1;
      gone.SetBuffers(kept.data() + r * stripes, stripes);
      RetireBuffers(gone, Leased(rec, now_us) ? rec.deadline_us : now_us, now_us);
      gone.SetBuffers(nullptr, 0);
      kept.erase(kept.begin() + r * stripes, kept.begin() + (r + 1) * stripes);
      break;
    }
  }
  kept.insert(kept.end(), placed.buffers(), placed.buffers() + placed.buffer_count);
  rec.SetBuffers(kept.data(), static_cast<uint32_t>(kept.size()));
  rec.replicas = static_cast<uint8_t>(kept.size() / stripes);
  placed.SetBuffers(nullptr, 0);
  if (listener_ != nullptr) rec.listener_tag = listener_->OnObjectCommitted(Dump(it));
  task.info.status = static_cast<uint8_t>(msg::TaskStatus::kSuccess);
  task.Touch(now_us);
  return Status::Ok();
}

bool MasterState::HasRunningTask(ObjectId id) const {
  for (const auto& [tid, task] : tasks_) {
    if (task->object == id && !Finished(task->info.task_status())) return true;
  }
  return false;
}

void MasterState::ExpireTasks(uint64_t now_us) {
  for (auto p = pending_upserts_.begin(); p != pending_upserts_.end();) {
    if (p->second->rec.deadline_us > now_us) {
      ++p;
      continue;
    }
    FreeBuffers(p->second->rec, nullptr);  // its write grants have expired
    p->second->rec.SetBuffers(nullptr, 0);
    p = pending_upserts_.erase(p);
  }
  for (auto& [id, task] : tasks_) {
    if (Finished(task->info.task_status()) || task->deadline_us > now_us) continue;
    FreeBuffers(task->placed, nullptr);
    task->placed.SetBuffers(nullptr, 0);
    FailTask(*task, task->info.task_status() == msg::TaskStatus::kPending
                        ? "the task was not started in time"
                        : "the copy did not end in time",
             now_us);
  }
}

// ---- clearing and removal by pattern -----------------------------------------

msg::ReplicaClearReply MasterState::BatchReplicaClear(const msg::ReplicaClearRequest& req,
                                                        uint64_t now_us) {
  msg::ReplicaClearReply reply;
  auto seg = segment_ids_.find(req.segment_name);
  if (!req.segment_name.empty() && seg == segment_ids_.end()) return reply;
  std::vector<bool> dropping(segments_.size(), false);
  if (!req.segment_name.empty()) dropping[seg->second] = true;
  const size_t n = std::min<size_t>(req.keys.size(), options_.max_batch);
  for (size_t k = 0; k < n; ++k) {
    auto it = objects_.find(req.keys[k]);
    // Leased objects may be being read; in-flight ones written.
    if (it == objects_.end() || !it->record.complete() || Leased(it->record, now_us)) continue;
    if (req.segment_name.empty()) {
      EraseObject(it, RemoveReason::kRemoved, true);
      reply.cleared.push_back(req.keys[k]);
      continue;
    }
    bool held = false;
    const uint64_t* b = it->record.buffers();
    for (uint32_t i = 0; i < it->record.buffer_count; ++i) held |= dropping[BufferSegment(b[i])];
    if (!held) continue;
    DropReplicasOn(it, dropping, /*segments_stay=*/true);
    reply.cleared.push_back(req.keys[k]);
  }
  return reply;
}

Result<msg::RemoveByRegexReply> MasterState::RemoveByRegex(const msg::RemoveByRegexRequest& req,
                                                           uint64_t now_us) {
  if (req.pattern.size() > kMaxRegexBytes)
    return Error(ErrorCode::INVALID_PARAMS, "pattern of " + std::to_string(req.pattern.size()) +
                                                " bytes is longer than " +
                                                std::to_string(kMaxRegexBytes));
  std::regex pattern;
  try {
    pattern = std::regex(req.pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return Error(ErrorCode::INVALID_PARAMS,
                 "pattern '" + req.pattern + "' is not a valid ECMAScript regex: " + e.what());
  }
  msg::RemoveByRegexReply reply;
  for (auto it = objects_.begin(); it != objects_.end();) {
    auto next = std::next(it);
    const ObjectRecord& rec = it->record;
    const std::string_view key = it->key();
    bool match = false;
    try {
      match = std::regex_search(key.begin(), key.end(), pattern);
    } catch (const std::regex_error& e) {  // too complex for this key
      return Error(ErrorCode::INVALID_PARAMS,
                   "pattern '" + req.pattern + "' is too complex to match: " + e.what());
    }
    if (match && rec.complete() && (req.force || !Leased(rec, now_us)) &&
        (tasks_.empty() || !HasRunningTask(IdOf(rec)))) {
      RetireObject(it, RemoveReason::kRemoved, now_us);
      ++reply.removed;
    }
    it = next;
  }
  return reply;
}

}  // namespace mc::master

// MasterState: batch forms, dumps and reloading durable state.
#include <algorithm>
#include <functional>

#include "common/debug_check.h"
#include "common/parallel_sort.h"
#include "master/master_state.h"
#include "master/master_state_internal.h"

namespace mc::master {

namespace {

template <typename Req>
Status CheckBatch(const std::vector<Req>& reqs, uint32_t max_batch, OpCounter& c) {
  ++c.requests;
  if (reqs.size() <= max_batch) return Status::Ok();
  ++c.failures;
  return Error(ErrorCode::INVALID_PARAMS, "batch of " + std::to_string(reqs.size()) +
                                              " items is longer than max_batch " +
                                              std::to_string(max_batch));
}

// A loaded buffer as FinishBulkLoad sorts it: (segment << 40 | offset / 64,
// aligned size).
std::pair<uint64_t, uint64_t> BulkRange(uint64_t packed, uint64_t size_bytes) {
  return {uint64_t{BufferSegment(packed)} << 40 | BufferOffset(packed) / SegmentAllocator::kAlignmentBytes,
          SegmentAllocator::AlignUp(size_bytes)};
}

}  // namespace

Result<std::vector<msg::BatchItem<msg::PutStartReply>>> MasterState::BatchPutStart(
    const std::vector<msg::PutStartRequest>& reqs, uint64_t now_us) {
  MC_RETURN_IF_ERROR(CheckBatch(reqs, options_.max_batch, counters_.batch_put_start));
  std::vector<msg::BatchItem<msg::PutStartReply>> out(reqs.size());
  bool failed = false;
  for (size_t i = 0; i < reqs.size(); ++i) {
    auto r = PutStart(reqs[i], now_us);
    if (r.ok()) {
      out[i].value = std::move(r).value();
    } else {
      out[i].status = r.status();
      failed = true;
    }
  }
  counters_.batch_put_start.failures += failed;
  return out;
}

// Batches of PutEnd, GetReplicaList and ExistKey are applied last key first,
// so the eviction policy sees the batch's first key as the most recent. An
// inference engine sends a prompt's KV blocks in chain order, and a block is
// only useful while every block before it is cached: keeping the head of a
// chain over its tail turns more of what survives into prefix hits. (Measured
// with mooncake bench --trace on the shared trace at 2048 blocks: 0.1408 ->
// 0.1478 prefix hit ratio.) Replies stay in request order.
Result<std::vector<Status>> MasterState::BatchPutEnd(const std::vector<msg::KeyRequest>& reqs,
                                                     uint64_t now_us) {
  MC_RETURN_IF_ERROR(CheckBatch(reqs, options_.max_batch, counters_.batch_put_end));
  std::vector<Status> out;
  out.reserve(reqs.size());
  out.resize(reqs.size());
  for (size_t i = reqs.size(); i-- > 0;) out[i] = PutEnd(reqs[i], now_us);
  counters_.batch_put_end.failures +=
      std::any_of(out.begin(), out.end(), [](const Status& s) { return !s.ok(); });
  return out;
}

Result<std::vector<Status>> MasterState::BatchPutRevoke(
    const std::vector<msg::KeyRequest>& reqs, uint64_t now_us) {
  MC_RETURN_IF_ERROR(CheckBatch(reqs, options_.max_batch, counters_.batch_put_revoke));
  std::vector<Status> out;
  out.reserve(reqs.size());
  for (const auto& req : reqs) out.push_back(PutRevoke(req, now_us));
  counters_.batch_put_revoke.failures +=
      std::any_of(out.begin(), out.end(), [](const Status& s) { return !s.ok(); });
  return out;
}

Result<std::vector<msg::BatchItem<msg::GetReplicaListReply>>>
MasterState::BatchGetReplicaList(const std::vector<msg::KeyRequest>& reqs, uint64_t now_us) {
  MC_RETURN_IF_ERROR(CheckBatch(reqs, options_.max_batch, counters_.batch_get_replica_list));
  std::vector<msg::BatchItem<msg::GetReplicaListReply>> out(reqs.size());
  bool failed = false;
  for (size_t i = reqs.size(); i-- > 0;) {
    auto r = GetReplicaList(reqs[i], now_us);
    if (r.ok()) {
      out[i].value = std::move(r).value();
    } else {
      out[i].status = r.status();
      failed = true;
    }
  }
  counters_.batch_get_replica_list.failures += failed;
  return out;
}

Result<std::vector<msg::BatchItem<bool>>> MasterState::BatchExistKey(
    const std::vector<msg::KeyRequest>& reqs, uint64_t now_us) {
  MC_RETURN_IF_ERROR(CheckBatch(reqs, options_.max_batch, counters_.batch_exist_key));
  std::vector<msg::BatchItem<bool>> out(reqs.size());
  for (size_t i = reqs.size(); i-- > 0;) out[i].value = ExistKey(reqs[i], now_us).value();
  return out;
}

// ---- dumps -------------------------------------------------------------------

std::vector<SegmentDump> MasterState::DumpSegments() const {
  std::vector<SegmentDump> out;
  for (const auto& [name, id] : segment_ids_)
    out.push_back(SegmentDump{segments_[id]->desc, segments_[id]->owner});
  return out;
}

std::vector<ObjectDump> MasterState::DumpObjects(bool complete_only) const {
  std::vector<ObjectDump> out;
  auto& self = const_cast<MasterState&>(*this);  // Dump takes a map iterator
  for (auto it = self.objects_.begin(); it != self.objects_.end(); ++it)
    if (!complete_only || it->record.complete()) out.push_back(Dump(it));
  return out;
}

// ---- reload ------------------------------------------------------------------

Status MasterState::LoadSegment(const SegmentDump& segment, uint64_t now_us) {
  StateListener* saved = listener_;
  listener_ = nullptr;  // replaying the journal must not append to it
  Status s = MountSegment(msg::MountSegmentRequest{segment.owner, segment.desc}, now_us);
  listener_ = saved;
  --counters_.mount_segment.requests;
  if (!s.ok()) --counters_.mount_segment.failures;
  return s;
}

Status MasterState::LoadObject(const ObjectDump& object, uint64_t now_us) {
  const std::string& key = object.key;
  MC_RETURN_IF_ERROR(CheckKey(key));
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::INVALID_PARAMS, "cannot load '" + key + "': " + why);
  };
  if (!object.complete) return bad("only complete objects are durable");
  if (object.size_bytes == 0 || object.size_bytes > ObjectRecord::kMaxSizeBytes ||
      object.replicas.empty() || object.replicas.size() > kMaxReplicas)
    return bad("size and replica count must be positive (the size below 256 TiB)");
  // In a bulk load FinishBulkLoad finds keys loaded twice, when it sorts them.
  if (!bulk_loading_ && objects_.find(key) != objects_.end())
    return Error(ErrorCode::OBJECT_ALREADY_EXISTS, "cannot load '" + key + "': exists");
  const uint32_t stripes = Stripes(object.size_bytes);
  if (uint64_t{stripes} * object.replicas.size() > kMaxBuffersPerObject)
    return bad("too many stripes");
  // Scratch kept across calls: a journal load calls this for every object,
  // and four heap blocks a call were a fair part of a 10M-object start.
  std::vector<uint64_t>& packed = load_packed_;
  std::vector<uint64_t>& sizes = load_sizes_;
  std::vector<uint32_t>& mine = load_mine_;
  std::vector<bool>& used_segment = load_used_segment_;
  packed.clear();
  sizes.clear();
  used_segment.assign(segments_.size(), false);
  Status failure;
  for (const auto& replica : object.replicas) {
    mine.clear();
    if (replica.size() != stripes) {
      failure = bad("a replica has " + std::to_string(replica.size()) + " buffers, expected " +
                    std::to_string(stripes));
      break;
    }
    for (uint32_t s = 0; s < stripes && failure.ok(); ++s) {
      const BufferLocation& b = replica[s];
      const uint64_t want = s + 1 < stripes
                                ? options_.stripe_size_bytes
                                : object.size_bytes - uint64_t{s} * options_.stripe_size_bytes;
      // By id when the loader resolved the name (the journal), else by name.
      uint32_t id = BufferLocation::kByName;
      if (b.segment_id != BufferLocation::kByName) {
        if (b.segment_id < segments_.size() && segments_[b.segment_id] != nullptr) id = b.segment_id;
      } else if (auto seg = segment_ids_.find(b.segment_name); seg != segment_ids_.end()) {
        id = seg->second;
      }
      const SegmentAllocator* alloc = id == BufferLocation::kByName ? nullptr : &segments_[id]->allocator;
      auto name = [&] {
        return id == BufferLocation::kByName ? b.segment_name : segments_[id]->desc.name;
      };
      const bool in_range = alloc != nullptr && b.offset % SegmentAllocator::kAlignmentBytes == 0 &&
                            b.offset <= alloc->capacity_bytes() &&
                            SegmentAllocator::AlignUp(b.size_bytes) <= alloc->capacity_bytes() - b.offset;
      if (alloc == nullptr) {
        failure = b.segment_id != BufferLocation::kByName
                      ? bad("segment id " + std::to_string(b.segment_id) + " is not mounted")
                      : bad("segment '" + b.segment_name + "' is not mounted");
      } else if (b.size_bytes != want) {
        failure = bad("buffer size " + std::to_string(b.size_bytes) + " should be " +
                      std::to_string(want));
      } else if (used_segment[id]) {
        failure = bad("two replicas share segment '" + name() + "'");
      } else if (!in_range || (!bulk_loading_ && !segments_[id]->allocator.Reserve(
                                                     b.offset, b.size_bytes))) {
        failure = bad("range " + std::to_string(b.offset) + "+" + std::to_string(b.size_bytes) +
                      " of segment '" + name() + "' is taken or out of range");
      } else {
        packed.push_back(PackBuffer(id, b.offset));
        sizes.push_back(b.size_bytes);
        allocated_bytes_ += SegmentAllocator::AlignUp(b.size_bytes);
        mine.push_back(id);
      }
    }
    for (uint32_t id : mine) used_segment[id] = true;
    if (!failure.ok()) break;
  }
  if (!failure.ok()) {
    for (size_t i = 0; i < packed.size(); ++i) {
      if (!bulk_loading_)
        segments_[BufferSegment(packed[i])]->allocator.Free(BufferOffset(packed[i]), sizes[i]);
      allocated_bytes_ -= SegmentAllocator::AlignUp(sizes[i]);
    }
    return failure;
  }
  assert(!object.key_hash || *object.key_hash == std::hash<std::string_view>()(key));
  const uint64_t key_hash = object.key_hash ? *object.key_hash : std::hash<std::string_view>()(key);
  ObjectIt it = InsertObject(key, nullptr, key_hash);
  ObjectRecord& rec = it->record;
  rec.size_bytes = object.size_bytes;
  rec.replicas = static_cast<uint8_t>(object.replicas.size());
  rec.flags = ObjectRecord::kComplete | (object.soft_pin ? ObjectRecord::kSoftPin : 0);
  rec.SetBuffers(packed.data(), static_cast<uint32_t>(packed.size()));
  rec.listener_tag = object.listener_tag;
  if (bulk_loading_) {
    for (size_t i = 0; i < packed.size(); ++i) bulk_ranges_.emplace_back(BulkRange(packed[i], sizes[i]));
  }
  if (object.soft_pin) {  // the pin restarts: its expiry is not durable
    rec.flags |= ObjectRecord::kPinCounted;
    rec.set_pin_expiry_us(now_us + options_.default_kv_soft_pin_ttl_us);
    ++soft_pinned_count_;
    pin_expiries_.push_back({rec.pin_expiry_us(), IdOf(rec)});
    std::push_heap(pin_expiries_.begin(), pin_expiries_.end(), std::greater<>());
  }
  policy_->OnInsert(IdOf(rec), key_hash, rec.size_bytes);
  return Status::Ok();
}

void MasterState::BeginBulkLoad(size_t expected_objects) {
  assert(objects_.empty() && allocated_bytes_ == 0);
  bulk_loading_ = true;
  bulk_unlinked_ = true;
  bulk_ranges_.clear();
  bulk_ranges_.reserve(expected_objects);  // one buffer each, the common case
  slot_nodes_.reserve(expected_objects);
  slot_generations_.reserve(expected_objects);
  policy_->Reserve(expected_objects);
  bulk_prefaulter_ = std::make_unique<Prefaulter>();
  auto prefault = [&](const auto& v) {
    bulk_prefaulter_->Add(v.data(), v.capacity() * sizeof(v[0]));
  };
  prefault(bulk_ranges_);
  prefault(slot_nodes_);
  prefault(slot_generations_);
  policy_->PrefaultReserved(*bulk_prefaulter_);
  objects_.SetPrefaulter(bulk_prefaulter_.get());
}

Status MasterState::FinishBulkLoad() {
  bulk_loading_ = false;
  objects_.SetPrefaulter(nullptr);  // every node is made
  // Every buffer as (segment << 40 | offset / 64, aligned size), appended
  // as the objects loaded: one array of 16 bytes a buffer, sorted once,
  // that becomes each segment's used list in place. A growing array of
  // wider entries, and a copy of it per segment, cost a 10M-object start
  // more in page zeroing than in sorting.
  static_assert(kSegmentIdBits + 40 == 64);
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  ranges.swap(bulk_ranges_);
  bulk_prefaulter_.reset();
  ParallelSort(ranges.begin(), ranges.end());
  auto segment_of = [](uint64_t at) { return static_cast<uint32_t>(at >> 40); };
  auto offset_of = [](uint64_t at) {
    return (at & ((uint64_t{1} << 40) - 1)) * SegmentAllocator::kAlignmentBytes;
  };
  size_t begin = 0;
  while (begin < ranges.size()) {
    const uint32_t segment = segment_of(ranges[begin].first);
    size_t end = begin;
    for (; end < ranges.size() && segment_of(ranges[end].first) == segment; ++end) {
      const uint64_t offset = offset_of(ranges[end].first);
      // ranges[end - 1] is already an (offset, size) of the used list
      if (end > begin && ranges[end - 1].first + ranges[end - 1].second > offset)
        return OverlapError(segment, ranges[end - 1].first, offset);
      ranges[end].first = offset;  // this segment's used list, in place
    }
    segments_[segment]->allocator.ReserveSorted(
        std::span<const std::pair<uint64_t, uint64_t>>(ranges.data() + begin, end - begin));
    begin = end;
  }
  std::string duplicate;
  // BeginBulkLoad's estimate was high (a journal with removed rows): give
  // back address space the slots will not need soon.
  if (slot_nodes_.capacity() > 2 * slot_nodes_.size()) {
    slot_nodes_.shrink_to_fit();
    slot_generations_.shrink_to_fit();
  }
  const bool built = objects_.Build(slot_nodes_, &duplicate, std::move(ranges));
  bulk_unlinked_ = false;  // linked, or (a key twice) every node freed
  if (!built) {
    std::fill(slot_nodes_.begin(), slot_nodes_.end(), 0);
    return Error(ErrorCode::OBJECT_ALREADY_EXISTS,
                 "cannot load '" + duplicate + "': it is loaded twice");
  }
  MC_DEBUG_CHECK_OK(CheckInvariants());
  return Status::Ok();
}

void MasterState::RestartClientClocks(uint64_t now_us) {
  for (auto& [id, client] : clients_) client.last_ping_us = std::max(client.last_ping_us, now_us);
}

// Names the objects of two overlapping buffers of a bulk load (a damaged
// journal): found by a scan, since only the error path needs them.
Status MasterState::OverlapError(uint32_t segment, uint64_t first_offset,
                                 uint64_t second_offset) const {
  auto key_at = [&](uint64_t offset) {
    for (uint32_t handle : slot_nodes_) {
      const ObjectIndex::Node* n = objects_.NodeAt(handle);
      if (n == nullptr) continue;
      for (uint32_t i = 0; i < n->record.buffer_count; ++i) {
        const uint64_t b = n->record.buffers()[i];
        if (BufferSegment(b) == segment && BufferOffset(b) == offset)
          return "'" + std::string(n->key()) + "'";
      }
    }
    return std::string("?");
  };
  return Error(ErrorCode::INVALID_PARAMS,
               "cannot load " + key_at(second_offset) + ": its buffer at " +
                   std::to_string(second_offset) + " of segment '" +
                   segments_[segment]->desc.name + "' overlaps one of " + key_at(first_offset));
}

}  // namespace mc::master

// MasterState's side of the disk tier: picking offload victims and dropping
// their memory copies once a store wrote them to its disk. What is on disk
// is not here (DiskReplicas, disk_replicas.h): the record of an object in
// memory stays the same size whether or not it also has a disk copy.
#include "master/master_state.h"
#include "master/master_state_internal.h"

namespace mc::master {

std::vector<MasterState::OffloadVictim> MasterState::TakeOffloadVictims(
    uint64_t target_bytes, uint64_t now_us,
    const std::function<bool(std::string_view segment)>& offloadable) {
  std::vector<OffloadVictim> out;
  uint64_t taken = 0;
  while (taken < target_bytes) {
    auto victim = policy_->NextVictim([&](ObjectId id) {
      auto it = FindById(id);
      if (it == objects_.end()) return true;  // stale: let the policy drop it
      const ObjectRecord& rec = it->record;
      if (!rec.complete() || Leased(rec, now_us) || Pinned(rec, now_us)) return false;
      if (rec.pin_expiry_us() == ObjectRecord::kHardPin) return false;
      if (!pending_upserts_.empty() && pending_upserts_.contains(rec.slot)) return false;
      if (rec.replicas != 1 || rec.buffer_count != 1) return false;
      const Segment* seg = segments_[BufferSegment(rec.buffers()[0])].get();
      return seg != nullptr && offloadable(seg->desc.name);
    });
    if (!victim) break;
    auto it = FindById(*victim);
    if (it == objects_.end()) continue;
    const ObjectRecord& rec = it->record;
    const uint64_t packed = rec.buffers()[0];
    out.push_back({std::string(it->key()), *victim, segments_[BufferSegment(packed)]->desc.name,
                   BufferOffset(packed), rec.size_bytes});
    taken += SegmentAllocator::AlignUp(rec.size_bytes);
  }
  return out;
}

bool MasterState::DropMemoryCopy(ObjectId id, uint64_t now_us, bool tracked) {
  auto it = FindById(id);
  if (it == objects_.end() || !it->record.complete()) return false;
  ObjectRecord& rec = it->record;
  const uint64_t before = allocated_bytes_ + retired_bytes_;
  RetireBuffers(rec, Leased(rec, now_us) ? rec.deadline_us : now_us, now_us);
  rec.SetBuffers(nullptr, 0);
  ++counters_.evicted_keys;
  counters_.evicted_bytes += before - std::min(before, allocated_bytes_ + retired_bytes_);
  // An offload victim left the policy when it was picked (TakeOffloadVictims).
  EraseObject(it, RemoveReason::kEvicted, tracked);
  return true;
}

std::optional<ObjectId> MasterState::CompleteId(std::string_view key) const {
  auto it = objects_.find(key);
  if (it == objects_.end() || !it->record.complete()) return std::nullopt;
  return IdOf(it->record);
}

}  // namespace mc::master

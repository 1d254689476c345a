#include "masterd/ha_image.h"

#include "common/byte_io.h"

namespace mc::masterd {

Status HaImage::Apply(const HaRecord& record) {
  switch (record.kind) {
    case HaRecord::Kind::kMount:
      segments_[record.segment.desc.name] = record.segment;
      return Status::Ok();
    case HaRecord::Kind::kUnmount:
      // Unknown is fine: a log may begin (after a snapshot) past the mount.
      segments_.erase(record.name);
      return Status::Ok();
    case HaRecord::Kind::kCommit: {
      master::ObjectDump& o = objects_[record.object.key];
      o = record.object;
      o.listener_tag = 0;
      return Status::Ok();
    }
    case HaRecord::Kind::kRemove:
      objects_.erase(record.name);
      return Status::Ok();
    case HaRecord::Kind::kDiskReplica:
    case HaRecord::Kind::kDiskRemove:
      return ApplyDisk(record);
  }
  return Error(ErrorCode::INTERNAL_ERROR, "HA record of unknown kind");
}

Status HaImage::ApplyEntry(std::string_view entry) {
  MC_ASSIGN_OR_RETURN(std::vector<HaRecord> records, DecodeHaEntry(entry));
  for (const HaRecord& r : records) MC_RETURN_IF_ERROR(Apply(r));
  return Status::Ok();
}

std::string HaImage::Snapshot() const {
  std::string out;
  ByteWriter(&out).U32(static_cast<uint32_t>(segments_.size() + objects_.size() + disk_.size()));
  HaRecord rec;
  rec.kind = HaRecord::Kind::kMount;
  for (const auto& [name, seg] : segments_) {
    rec.segment = seg;
    EncodeHaRecord(rec, &out, nullptr);
  }
  rec.kind = HaRecord::Kind::kCommit;
  std::string last_segment;
  for (const auto& [key, obj] : objects_) {
    rec.object = obj;
    EncodeHaRecord(rec, &out, &last_segment);
  }
  SnapshotDisk(&out);
  return out;
}

Status HaImage::Restore(std::string_view snapshot) {
  HaImage fresh;
  MC_RETURN_IF_ERROR(fresh.ApplyEntry(snapshot));
  segments_ = std::move(fresh.segments_);
  objects_ = std::move(fresh.objects_);
  disk_ = std::move(fresh.disk_);
  return Status::Ok();
}

bool HaImage::OnMountedSegments(const master::ObjectDump& object) const {
  for (const auto& replica : object.replicas) {
    for (const master::BufferLocation& b : replica) {
      if (!segments_.count(b.segment_name)) return false;
    }
  }
  return true;
}

Result<size_t> HaImage::LoadInto(master::MasterState& state, uint64_t now_us) const {
  for (const auto& [name, seg] : segments_) MC_RETURN_IF_ERROR(state.LoadSegment(seg, now_us));
  state.BeginBulkLoad();
  size_t dropped = 0;
  for (const auto& [key, obj] : objects_) {
    // The records of one operation (an unmount and the removals it caused)
    // may straddle two entries; a leader that died between them never
    // acknowledged the operation, and an object left on a segment the log
    // already unmounted has no bytes to serve.
    if (!OnMountedSegments(obj)) {
      ++dropped;
      continue;
    }
    MC_RETURN_IF_ERROR(state.LoadObject(obj, now_us));
  }
  MC_RETURN_IF_ERROR(state.FinishBulkLoad());
  return dropped;
}

}  // namespace mc::masterd

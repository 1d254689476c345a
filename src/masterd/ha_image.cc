#include "masterd/ha_image.h"

#include <cassert>

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
      std::string& body = objects_[record.object.key];  // one lookup, insert or reuse
      body.clear();
      EncodeHaObjectBody(record.object, &body);
      return Status::Ok();
    }
    case HaRecord::Kind::kRemove:
      if (auto found = objects_.find(std::string_view(record.name)); found != objects_.end())
        objects_.erase(found);
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
  std::string last_segment;
  master::ObjectDump object;  // reused: its vectors and names keep their capacity
  for (const auto& [key, body] : objects_) {
    // The bodies were checked when they were made.
    [[maybe_unused]] const Status decoded = DecodeHaObjectBody(body, &object);
    assert(decoded.ok());
    AppendHaCommit(key, object, &out, &last_segment);
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
  master::ObjectDump obj;
  for (const auto& [key, body] : objects_) {
    MC_RETURN_IF_ERROR(DecodeHaObjectBody(body, &obj));
    obj.key = key;
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

#include "masterd/ha_image.h"

#include "common/byte_io.h"
#include "common/ceilings.h"
#include "proto/codec.h"

namespace mc::masterd {

namespace {

// A record count an entry may claim: bounded by its bytes (each record takes
// at least two), so a lying count reserves nothing.
constexpr uint32_t kMaxRecordsPerEntry = 1u << 24;

void EncodeObject(ByteWriter& w, const master::ObjectDump& o) {
  w.Str(o.key);
  w.U64(o.size_bytes);
  w.Bool(o.complete);
  w.Bool(o.soft_pin);
  w.U32(static_cast<uint32_t>(o.replicas.size()));
  for (const auto& replica : o.replicas) {
    w.U32(static_cast<uint32_t>(replica.size()));
    for (const master::BufferLocation& b : replica) {
      w.Str(b.segment_name);
      w.U64(b.offset);
      w.U64(b.size_bytes);
    }
  }
}

void DecodeObject(ByteReader& r, master::ObjectDump* o) {
  r.Str(&o->key, kMaxStringBytes, "commit.key");
  o->size_bytes = r.U64("commit.size");
  o->complete = r.Bool("commit.complete");
  o->soft_pin = r.Bool("commit.soft_pin");
  const uint32_t replicas = r.Count(kMaxReplicas, "commit.replicas");
  for (uint32_t i = 0; i < replicas && r.ok(); ++i) {
    auto& replica = o->replicas.emplace_back();
    const uint32_t buffers = r.Count(kMaxBuffersPerObject, "commit.buffers");
    for (uint32_t j = 0; j < buffers && r.ok(); ++j) {
      master::BufferLocation& b = replica.emplace_back();
      r.Str(&b.segment_name, kMaxStringBytes, "buffer.segment");
      b.offset = r.U64("buffer.offset");
      b.size_bytes = r.U64("buffer.size");
    }
  }
}

void DecodeRecord(ByteReader& r, HaRecord* rec) {
  const uint8_t kind = r.U8("record.kind");
  rec->kind = static_cast<HaRecord::Kind>(kind);
  switch (rec->kind) {
    case HaRecord::Kind::kMount:
      proto::Decode(r, &rec->segment.desc);
      proto::Decode(r, &rec->segment.owner);
      break;
    case HaRecord::Kind::kCommit:
      DecodeObject(r, &rec->object);
      break;
    case HaRecord::Kind::kUnmount:
    case HaRecord::Kind::kRemove:
      r.Str(&rec->name, kMaxStringBytes, "record.name");
      break;
    default:
      r.Fail("record.kind", "unknown record kind");
  }
}

}  // namespace

void EncodeHaRecord(const HaRecord& record, std::string* out) {
  ByteWriter w(out);
  w.U8(static_cast<uint8_t>(record.kind));
  switch (record.kind) {
    case HaRecord::Kind::kMount:
      proto::Encode(w, record.segment.desc);
      proto::Encode(w, record.segment.owner);
      break;
    case HaRecord::Kind::kCommit:
      EncodeObject(w, record.object);
      break;
    case HaRecord::Kind::kUnmount:
    case HaRecord::Kind::kRemove:
      w.Str(record.name);
      break;
  }
}

std::string EncodeHaEntry(const std::vector<HaRecord>& records) {
  std::string out;
  ByteWriter(&out).U32(static_cast<uint32_t>(records.size()));
  for (const HaRecord& r : records) EncodeHaRecord(r, &out);
  return out;
}

Result<std::vector<HaRecord>> DecodeHaEntry(std::string_view bytes) {
  ByteReader r(bytes);
  const uint32_t n = r.Count(kMaxRecordsPerEntry, "entry.records");
  std::vector<HaRecord> out;
  for (uint32_t i = 0; i < n && r.ok(); ++i) DecodeRecord(r, &out.emplace_back());
  MC_RETURN_IF_ERROR(r.Finish("HA log entry"));
  return out;
}

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
  ByteWriter(&out).U32(static_cast<uint32_t>(segments_.size() + objects_.size()));
  HaRecord rec;
  rec.kind = HaRecord::Kind::kMount;
  for (const auto& [name, seg] : segments_) {
    rec.segment = seg;
    EncodeHaRecord(rec, &out);
  }
  rec.kind = HaRecord::Kind::kCommit;
  for (const auto& [key, obj] : objects_) {
    rec.object = obj;
    EncodeHaRecord(rec, &out);
  }
  return out;
}

Status HaImage::Restore(std::string_view snapshot) {
  HaImage fresh;
  MC_RETURN_IF_ERROR(fresh.ApplyEntry(snapshot));
  segments_ = std::move(fresh.segments_);
  objects_ = std::move(fresh.objects_);
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

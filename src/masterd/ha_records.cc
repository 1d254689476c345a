#include "masterd/ha_image.h"

#include <cstdint>

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

// The disk tier's record (issue 31): key, disk id, size.
void EncodeDiskReplica(ByteWriter& w, const HaRecord& record) {
  w.Str(record.name);
  w.Str(record.disk_id);
  w.U64(record.size_bytes);
}

void DecodeDiskReplica(ByteReader& r, HaRecord* record) {
  r.Str(&record->name, kMaxStringBytes, "disk.key");
  r.Str(&record->disk_id, kMaxStringBytes, "disk.disk_id");
  record->size_bytes = r.U64("disk.size");
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
    case HaRecord::Kind::kDiskRemove:
      r.Str(&rec->name, kMaxStringBytes, "record.name");
      break;
    case HaRecord::Kind::kDiskReplica:
      DecodeDiskReplica(r, rec);
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
    case HaRecord::Kind::kDiskRemove:
      w.Str(record.name);
      break;
    case HaRecord::Kind::kDiskReplica:
      EncodeDiskReplica(w, record);
      break;
  }
}

std::string EncodeHaEntry(const std::vector<HaRecord>& records) {
  size_t taken = 0;
  return EncodeHaEntryUpTo(records, SIZE_MAX, &taken);
}

std::string EncodeHaEntryUpTo(const std::vector<HaRecord>& records, size_t max_bytes,
                              size_t* taken) {
  std::string out;
  ByteWriter(&out).U32(0);  // the count, filled in below
  size_t n = 0;
  for (; n < records.size(); ++n) {
    const size_t before = out.size();
    EncodeHaRecord(records[n], &out);
    if (n > 0 && out.size() > max_bytes) {
      out.resize(before);
      break;
    }
  }
  std::string count;
  ByteWriter(&count).U32(static_cast<uint32_t>(n));
  out.replace(0, count.size(), count);
  *taken = n;
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

}  // namespace mc::masterd

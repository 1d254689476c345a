#include "masterd/ha_image.h"

#include <zlib.h>

#include <cstdint>

#include "common/byte_io.h"
#include "common/ceilings.h"
#include "ha/fenced_log.h"
#include "proto/codec.h"

namespace mc::masterd {

namespace {

// A record count an entry may claim: bounded by its bytes (each record takes
// at least two), so a lying count reserves nothing.
constexpr uint32_t kMaxRecordsPerEntry = 1u << 24;

// A commit's wire kind since the packed form; kCommit (3) is still read.
constexpr uint8_t kPackedCommitKind = 7;
constexpr uint8_t kFlagComplete = 1, kFlagSoftPin = 2;

// Packed commit's body, what follows its key (a VarStr): size, replica and
// buffer counts and buffer offsets and sizes as Vars, the two flags in one
// byte, and each buffer's segment as Var 0 when it is the segment of the
// buffer before it in the entry (most buffers of a batch lie on one), else
// Var (length + 1) and the name.
// `last_segment`: that segment so far (nullptr: every name written).
void EncodeObjectBody(ByteWriter& w, const master::ObjectDump& o, std::string* last_segment) {
  w.Var(o.size_bytes);
  w.U8((o.complete ? kFlagComplete : 0) | (o.soft_pin ? kFlagSoftPin : 0));
  w.Var(o.replicas.size());
  for (const auto& replica : o.replicas) {
    w.Var(replica.size());
    for (const master::BufferLocation& b : replica) {
      if (last_segment != nullptr && !last_segment->empty() && *last_segment == b.segment_name) {
        w.Var(0);
      } else {
        w.Var(b.segment_name.size() + 1);
        w.Raw(b.segment_name.data(), b.segment_name.size());
        if (last_segment != nullptr) *last_segment = b.segment_name;
      }
      w.Var(b.offset);
      w.Var(b.size_bytes);
    }
  }
}

// `last_segment` as for EncodeObjectBody: empty refuses a back-reference
// in the first buffer (the image's bodies have none, but are read with the
// same checks).
void DecodeObjectBody(ByteReader& r, master::ObjectDump* o, std::string* last_segment) {
  o->size_bytes = r.Var("commit.size");
  const uint8_t flags = r.U8("commit.flags");
  if (flags & ~(kFlagComplete | kFlagSoftPin)) r.Fail("commit.flags", "unknown flag bits");
  o->complete = flags & kFlagComplete;
  o->soft_pin = flags & kFlagSoftPin;
  const uint32_t replicas = r.VarCount(kMaxReplicas, "commit.replicas");
  o->replicas.resize(replicas);
  for (uint32_t i = 0; i < replicas && r.ok(); ++i) {
    auto& replica = o->replicas[i];
    const uint32_t buffers = r.VarCount(kMaxBuffersPerObject, "commit.buffers");
    replica.resize(buffers);
    for (uint32_t j = 0; j < buffers && r.ok(); ++j) {
      master::BufferLocation& b = replica[j];
      const uint64_t name_len = r.Var("buffer.segment");
      if (name_len == 0) {
        if (last_segment->empty()) r.Fail("buffer.segment", "refers to no earlier segment");
        b.segment_name = *last_segment;
      } else if (name_len - 1 > kMaxStringBytes) {
        r.Fail("buffer.segment", "string longer than its limit");
      } else {
        b.segment_name.resize(name_len - 1);
        r.Raw(b.segment_name.data(), name_len - 1, "buffer.segment");
        *last_segment = b.segment_name;
      }
      b.offset = r.Var("buffer.offset");
      b.size_bytes = r.Var("buffer.size");
    }
  }
}

// The first commit layout (kind 3), written by earlier builds: u32 lengths
// and counts, u64 numbers, the segment named in every buffer.
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

void DecodeRecord(ByteReader& r, HaRecord* rec, std::string* last_segment) {
  const uint8_t kind = r.U8("record.kind");
  if (kind == kPackedCommitKind) {
    rec->kind = HaRecord::Kind::kCommit;
    r.VarStr(&rec->object.key, kMaxStringBytes, "commit.key");
    DecodeObjectBody(r, &rec->object, last_segment);
    return;
  }
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

void EncodeHaRecord(const HaRecord& record, std::string* out, std::string* last_segment) {
  ByteWriter w(out);
  if (record.kind == HaRecord::Kind::kCommit) {
    w.U8(kPackedCommitKind);
    w.VarStr(record.object.key);
    EncodeObjectBody(w, record.object, last_segment);
    return;
  }
  w.U8(static_cast<uint8_t>(record.kind));
  switch (record.kind) {
    case HaRecord::Kind::kMount:
      proto::Encode(w, record.segment.desc);
      proto::Encode(w, record.segment.owner);
      break;
    case HaRecord::Kind::kCommit:
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

void EncodeHaObjectBody(const master::ObjectDump& object, std::string* out) {
  ByteWriter w(out);
  EncodeObjectBody(w, object, nullptr);
}

Status DecodeHaObjectBody(std::string_view body, master::ObjectDump* object) {
  ByteReader r(body);
  std::string no_segment;
  DecodeObjectBody(r, object, &no_segment);
  return r.Finish("HA image object");
}

void AppendHaCommit(std::string_view key, const master::ObjectDump& body_of, std::string* out,
                    std::string* last_segment) {
  ByteWriter w(out);
  w.U8(kPackedCommitKind);
  w.VarStr(key);
  EncodeObjectBody(w, body_of, last_segment);
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
  std::string last_segment;  // the record dropped below is the last one encoded
  for (; n < records.size(); ++n) {
    const size_t before = out.size();
    EncodeHaRecord(records[n], &out, &last_segment);
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

namespace {

// zlib's fastest level: bench entries shrink to about a third (10.7 KB to
// 3.5 KB) for about 130 us of a shipper per entry; levels 6-9 gain a
// tenth more for several times that. Every byte is copied by each etcd
// member (gRPC, raft, WAL, bbolt) and kept on its disk, though its CPU
// follows the txns more than their bytes (a tenth less per put measured).
constexpr int kHaEntryDeflateLevel = 1;
constexpr size_t kCompressedHeaderBytes = 8;  // mark, plain size

// The plain entry of a marked one, at most ha::kMaxLogEntryBytes: a
// hostile size claim or a deflate stream that inflates further is refused
// before more than that is allocated.
Result<std::string> InflateHaEntry(std::string_view bytes) {
  if (bytes.size() < kCompressedHeaderBytes) {
    return Error(ErrorCode::PROTOCOL_ERROR, "HA log entry: compressed entry's header is cut short");
  }
  ByteReader r(bytes);
  (void)r.U32("entry.mark");
  const uint32_t plain_bytes = r.U32("entry.plain_size");
  if (plain_bytes > ha::kMaxLogEntryBytes) {
    return Error(ErrorCode::PROTOCOL_ERROR,
                 "HA log entry: compressed entry claims " + std::to_string(plain_bytes) +
                     " plain bytes, over the limit of " + std::to_string(ha::kMaxLogEntryBytes));
  }
  std::string plain(plain_bytes, '\0');
  uLongf out_len = plain_bytes;
  const std::string_view body = bytes.substr(kCompressedHeaderBytes);
  const int rc = uncompress(reinterpret_cast<Bytef*>(plain.data()), &out_len,
                            reinterpret_cast<const Bytef*>(body.data()), body.size());
  if (rc != Z_OK || out_len != plain_bytes) {
    return Error(ErrorCode::PROTOCOL_ERROR,
                 std::string("HA log entry: compressed body ") +
                     (rc == Z_OK ? "inflates to " + std::to_string(out_len) + " bytes, not the " +
                                       std::to_string(plain_bytes) + " its header states"
                                 : rc == Z_BUF_ERROR ? "is truncated or inflates past its stated size"
                                                     : "is not a zlib stream"));
  }
  return plain;
}

}  // namespace

bool IsCompressedHaEntry(std::string_view bytes) {
  if (bytes.size() < 4) return false;
  ByteReader r(bytes);
  return r.U32("entry.mark") == kCompressedHaEntryMark;
}

std::string CompressHaEntry(std::string_view entry) {
  if (entry.size() > ha::kMaxLogEntryBytes) return {};  // the log refuses it either way
  uLongf out_len = compressBound(entry.size());
  std::string out(kCompressedHeaderBytes + out_len, '\0');
  const int rc = compress2(reinterpret_cast<Bytef*>(out.data() + kCompressedHeaderBytes),
                           &out_len, reinterpret_cast<const Bytef*>(entry.data()), entry.size(),
                           kHaEntryDeflateLevel);
  if (rc != Z_OK || kCompressedHeaderBytes + out_len >= entry.size()) return {};
  out.resize(kCompressedHeaderBytes + out_len);
  std::string header;
  ByteWriter w(&header);
  w.U32(kCompressedHaEntryMark);
  w.U32(static_cast<uint32_t>(entry.size()));
  out.replace(0, header.size(), header);
  return out;
}

Result<std::vector<HaRecord>> DecodeHaEntry(std::string_view bytes) {
  if (IsCompressedHaEntry(bytes)) {
    MC_ASSIGN_OR_RETURN(const std::string plain, InflateHaEntry(bytes));
    // One level only: a plain entry never starts with the mark (its count
    // is bounded far below it).
    if (IsCompressedHaEntry(plain)) {
      return Error(ErrorCode::PROTOCOL_ERROR, "HA log entry: compressed twice");
    }
    return DecodeHaEntry(plain);
  }
  ByteReader r(bytes);
  const uint32_t n = r.Count(kMaxRecordsPerEntry, "entry.records");
  std::vector<HaRecord> out;
  std::string last_segment;  // see EncodeObjectBody
  for (uint32_t i = 0; i < n && r.ok(); ++i) DecodeRecord(r, &out.emplace_back(), &last_segment);
  MC_RETURN_IF_ERROR(r.Finish("HA log entry"));
  return out;
}

}  // namespace mc::masterd

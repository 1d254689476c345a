// The master's replicated state as HA ships it: the records of the HA log
// (one per StateListener call, the same changes the SQLite journal writes)
// and the image they build, the durable state keyed by name.
//
// An entry of the log (ha::FencedLog) is a group commit: a u32 count, then
// that many records, each a u8 kind and its fields (ByteWriter layout):
//   1 mount    SegmentDesc (proto's field list), owner ClientId
//   2 unmount  segment name
//   3 commit   key, size u64, complete, soft_pin, u32 replicas x (u32
//              buffers x (segment name, offset u64, size u64)); read only:
//              commits are written as 7
//   4 remove   key
//   5 disk replica       key, disk id, size u64 (the disk tier's)
//   6 disk replica gone  key
//   7 commit, packed: key (Var length), size Var, flags u8 (1 complete,
//              2 soft_pin), Var replicas x (Var buffers x (segment, offset
//              Var, size Var)); a segment is Var 0 for the segment of the
//              buffer before it in the same entry, else Var (length + 1)
//              and the name. Vars are LEB128 (ByteWriter::Var). A commit
//              record takes about half the bytes of kind 3; builds before
//              it cannot read a log that holds one, so upgrade the standbys
//              first (mooncake-master(1)).
// The image's snapshot is one entry's layout too: mounts, then commits,
// then disk replicas.
// Standbys apply entries to their image in order; a new leader loads the
// image into its MasterState with one bulk load (MasterState::LoadSegment,
// LoadObject), as a restarted master loads its journal.
// Plain values, not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "master/master_state.h"
#include "master/state_listener.h"
#include "masterd/disk_replica_listener.h"

namespace mc::masterd {

struct HaRecord {
  enum class Kind : uint8_t {
    kMount = 1, kUnmount = 2, kCommit = 3, kRemove = 4,
    kDiskReplica = 5, kDiskRemove = 6,  // the disk tier's (DiskReplicaListener)
  };
  Kind kind = Kind::kMount;
  master::SegmentDump segment;  // kMount
  master::ObjectDump object;    // kCommit
  std::string name;             // kUnmount: segment; kRemove, kDisk*: key
  std::string disk_id;          // kDiskReplica
  uint64_t size_bytes = 0;      // kDiskReplica
};

// A disk replica as the image keeps it (by key).
struct HaDiskReplica {
  std::string disk_id;
  uint64_t size_bytes = 0;
};

// Appends one record to `out`. `last_segment` carries the packed commit's
// segment back-reference from one record to the next of the same entry or
// snapshot (start each with an empty one); nullptr writes every name.
void EncodeHaRecord(const HaRecord& record, std::string* out, std::string* last_segment);
// An entry: the count, then the records.
std::string EncodeHaEntry(const std::vector<HaRecord>& records);
// The entry of the longest prefix of `records` (at least one record) that
// fits in `max_bytes`; `*taken`: how many records it holds.
std::string EncodeHaEntryUpTo(const std::vector<HaRecord>& records, size_t max_bytes,
                              size_t* taken);
// PROTOCOL_ERROR naming the field for bytes that are not an entry. A
// compressed entry (CompressHaEntry) is inflated first.
Result<std::vector<HaRecord>> DecodeHaEntry(std::string_view bytes);

// A compressed entry starts with this where a plain one has its record
// count: a count over any entry's limit, so a master from before
// compression refuses it (PROTOCOL_ERROR on entry.records) rather than
// misreading it. Then the plain entry's size (u32, at most
// ha::kMaxLogEntryBytes) and the plain entry deflated (zlib format).
constexpr uint32_t kCompressedHaEntryMark = 0xFFFFFFFEu;
// `entry` (an encoded entry) deflated behind the mark, or empty when that
// would not be smaller (tiny entries, incompressible keys): ship `entry`.
std::string CompressHaEntry(std::string_view entry);
// Whether `bytes` carry the mark.
bool IsCompressedHaEntry(std::string_view bytes);

// The image keeps an object as the body of its packed commit record (what
// follows the key), every segment named in full: one string instead of a
// tree of vectors and names.
void EncodeHaObjectBody(const master::ObjectDump& object, std::string* out);
// A body back into `object` (its key left as it is), checked as an entry's
// commit is.
Status DecodeHaObjectBody(std::string_view body, master::ObjectDump* object);
// Appends the packed commit record of `key` with `object`'s body (its key
// unused) to `out`; `last_segment` as for EncodeHaRecord.
void AppendHaCommit(std::string_view key, const master::ObjectDump& object, std::string* out,
                    std::string* last_segment);

class HaImage {
 public:
  // Applies a record (an upsert or an erase by name).
  Status Apply(const HaRecord& record);
  Status ApplyEntry(std::string_view entry);
  std::string Snapshot() const;
  // Replaces the image with a snapshot's.
  Status Restore(std::string_view snapshot);
  // Loads the image into a fresh state (bulk load); objects with a buffer
  // on a segment the image does not hold are left out. Returns how many.
  Result<size_t> LoadInto(master::MasterState& state, uint64_t now_us) const;

  // Visits every disk replica (MasterService::LoadTier's loader).
  Status ForEachDiskReplica(const DiskReplicaVisitor& visit) const;
  const std::map<std::string, HaDiskReplica, std::less<>>& disk_replicas() const {
    return disk_;
  }

  uint64_t index() const { return index_; }  // the last log entry applied
  void set_index(uint64_t index) { index_ = index; }
  size_t segments() const { return segments_.size(); }
  size_t objects() const { return objects_.size(); }

 private:
  // Hashes std::string and std::string_view alike, so lookups by a view
  // make no string.
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>()(s);
    }
  };
  bool OnMountedSegments(const master::ObjectDump& object) const;
  Status ApplyDisk(const HaRecord& record);      // ha_tier_records.cc
  void SnapshotDisk(std::string* out) const;     // ha_tier_records.cc
  std::map<std::string, master::SegmentDump, std::less<>> segments_;
  // Key -> EncodeHaObjectBody. A hash table, not a tree: a standby applies
  // every commit and remove of the pool, and so does the leader (for its
  // snapshots); a tree of ObjectDumps was a quarter of their CPU under a
  // put load (perf, bench_ha.py), with string compares down the tree and
  // heap blocks per buffer.
  std::unordered_map<std::string, std::string, KeyHash, std::equal_to<>> objects_;
  std::map<std::string, HaDiskReplica, std::less<>> disk_;  // by key
  uint64_t index_ = 0;
};

}  // namespace mc::masterd

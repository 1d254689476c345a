// MasterState: the master's core as a pure state machine.
//
// Owns the object index (key -> replicas -> buffers in segments), the space
// allocator of every mounted segment, leases, soft pins, eviction and client
// liveness. Every operation takes the current time (`now_us`, monotonic) and
// returns its decision; nothing here sleeps, reads a clock or does I/O, so
// tests advance time by passing a larger number and the RPC glue is a thin
// loop: lock, call, unlock, reply. Inputs and outputs are the wire
// vocabulary of src/msg/messages.h.
//
// Rules (see mooncake-master(8) and FIELD.md for the reference behaviour):
// - PutStart places one replica per distinct segment, emptiest segments
//   first, never on a segment whose owner missed its pings; objects larger
//   than `stripe_size_bytes` are cut into stripes spread over several
//   segments. When space is short it evicts synchronously (unpinned objects
//   first, then pinned ones) and fails with NO_AVAILABLE_HANDLE only when
//   nothing evictable is left or the object can never fit.
// - Reads (GetReplicaList, ExistKey) grant a lease; leased and in-flight
//   objects are never evicted, and leased ones are removed only by force,
//   which keeps their buffers allocated (retired) until the lease ends or its
//   reads are released (master_state_held.cc), so no read grant outlives the
//   bytes it names.
//   A lease ends at its TTL, or earlier once every GetReplicaList of it was
//   released (ReleaseLeases) by its client within its own TTL. ExistKey's
//   lease guards no bytes (it describes no replica), so a release can end it.
// - Tick expires dead clients (their segments are unmounted), discards puts
//   neither ended nor revoked within `put_timeout_us`, expires soft pins and
//   evicts in the background above the high watermark.
//
// Not thread-safe: the caller holds one lock around every call.
#pragma once

#include <cstdint>
#include <map>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/ceilings.h"
#include "common/defaults.h"
#include "common/result.h"
#include "eviction/policy.h"
#include "master/master_counters.h"
#include "master/object_index.h"
#include "master/object_record.h"
#include "master/segment_allocator.h"
#include "master/stale_ranges.h"
#include "master/state_listener.h"
#include "msg/messages.h"
#include "msg/ops_messages.h"

namespace mc::master {

// The state machine's own ceilings (kMaxReplicas, kMaxBuffersPerObject) are
// in common/ceilings.h, where the config checks settings against them.

// What the state machine needs from the configuration: TTLs, watermarks and
// limits. The master process fills it from [master] (masterd::MasterOptions);
// ports, addresses and the data directory stay out of the core. Its defaults
// are [master]'s, both read from common/defaults.h.
struct Options {
  uint64_t default_kv_lease_ttl_us = kDefaultKvLeaseTtlUs;
  uint64_t default_kv_soft_pin_ttl_us = kDefaultKvSoftPinTtlUs;
  double eviction_high_watermark_ratio = kDefaultEvictionHighWatermarkRatio;
  double eviction_ratio = kDefaultEvictionRatio;
  uint64_t client_ttl_us = kDefaultClientTtlUs;
  uint64_t put_timeout_us = kDefaultPutTimeoutUs;
  uint64_t stripe_size_bytes = kDefaultStripeSizeBytes;
  uint32_t max_batch = kDefaultMaxBatch;        // at most kMaxBatchItems (checked by the config)
  uint32_t max_key_bytes = kDefaultMaxKeyBytes;  // at most kMaxStringBytes (checked by the config)
  // False: Tick never evicts in the background (the master offloads to
  // the stores' disk tiers instead, TakeOffloadVictims); puts still evict
  // for themselves when space is short.
  bool background_eviction = true;
  // The high half of every copy/move task id (the low half counts), so ids
  // of a restarted master differ from the old one's: the process picks it.
  uint64_t task_id_seed = 0;
  // Collect the ranges of removed and replaced objects for TakeStaleRanges
  // (the master process retires them on the stores; see stale_ranges.h).
  bool track_stale_ranges = false;
  // The object index's nodes on hugetlb pages while the pool has free ones
  // (ObjectIndex's huge_pages).
  bool index_hugepages = false;
};

struct TickReport {
  uint64_t expired_clients = 0;
  uint64_t unmounted_segments = 0;
  uint64_t discarded_puts = 0;
  uint64_t expired_pins = 0;
  uint64_t evicted_keys = 0;
  uint64_t evicted_bytes = 0;
};

class MasterState {
 public:
  // `policy` must not be null; `listener` may be, and must outlive this.
  MasterState(const Options& options, std::unique_ptr<EvictionPolicy> policy,
              StateListener* listener = nullptr);
  ~MasterState();
  MasterState(const MasterState&) = delete;
  MasterState& operator=(const MasterState&) = delete;

  // Mounting the same segment again (same owner, incarnation and size) is an
  // idempotent success; any other reuse of a name is SEGMENT_ALREADY_EXISTS.
  Status MountSegment(const msg::MountSegmentRequest& req, uint64_t now_us);
  Status UnmountSegment(const msg::UnmountSegmentRequest& req, uint64_t now_us);
  // An unknown client is registered and told to remount its segments, at
  // every ping until it mounts one (the reply to the first may be lost).
  msg::PingReply Ping(const msg::PingRequest& req, uint64_t now_us);

  Result<msg::PutStartReply> PutStart(const msg::PutStartRequest& req, uint64_t now_us);
  Status PutEnd(const msg::KeyRequest& req, uint64_t now_us);     // idempotent
  Status PutRevoke(const msg::KeyRequest& req, uint64_t now_us);
  Result<msg::GetReplicaListReply> GetReplicaList(const msg::KeyRequest& req,
                                                    uint64_t now_us);
  // True when the key is complete (and leased); false when absent or in flight.
  Result<bool> ExistKey(const msg::KeyRequest& req, uint64_t now_us);
  Status Remove(const msg::RemoveRequest& req, uint64_t now_us);
  // Removes every complete, unleased object.
  // Removes every complete object that is not leased (with `force`, leased
  // ones too); objects still being written stay with their writer.
  msg::RemoveAllReply RemoveAll(uint64_t now_us, bool force = false);
  // Complete keys in byte order, after `cursor`, at most min(limit, max_batch).
  Result<msg::ListKeysReply> ListKeys(const msg::ListKeysRequest& req, uint64_t now_us);
  msg::ClusterStatusReply ClusterStatus(uint64_t now_us) const;

  // Batches: one result per item, in order; refused whole (INVALID_PARAMS)
  // only when longer than `max_batch`.
  Result<std::vector<msg::BatchItem<msg::PutStartReply>>> BatchPutStart(
      const std::vector<msg::PutStartRequest>& reqs, uint64_t now_us);
  Result<std::vector<Status>> BatchPutEnd(const std::vector<msg::KeyRequest>& reqs,
                                          uint64_t now_us);
  Result<std::vector<Status>> BatchPutRevoke(const std::vector<msg::KeyRequest>& reqs,
                                             uint64_t now_us);
  Result<std::vector<msg::BatchItem<msg::GetReplicaListReply>>> BatchGetReplicaList(
      const std::vector<msg::KeyRequest>& reqs, uint64_t now_us);
  Result<std::vector<msg::BatchItem<bool>>> BatchExistKey(
      const std::vector<msg::KeyRequest>& reqs, uint64_t now_us);

  // Reads a client served from its direct-read cache (master_state_access.cc):
  // each complete key counts as up to kMaxReportedAccessesPerKey accesses
  // for eviction. No lease: a direct read needs none (its seal proves its
  // bytes). Unknown and in-flight keys are skipped. Returns the keys counted.
  static constexpr uint32_t kMaxReportedAccessesPerKey = 16;
  uint64_t ReportAccesses(const msg::AccessReport& report, uint64_t now_us);

  // The clients are done reading these keys (see the rules above). Never
  // fails: a key not found, never leased by that client, or whose lease
  // ran out is skipped.
  void ReleaseLeases(const std::vector<msg::KeyRequest>& reqs, uint64_t now_us);

  // ---- master_state_ops.cc: upserts, copy/move tasks, clears ----
  //
  // Upsert: an absent key is put as by PutStart (OBJECT_ALREADY_EXISTS
  // never); a key still being written is taken from its writer (whose
  // buffers stay allocated until its write grants expire). For a complete
  // key the new version is placed beside the old one, which stays readable;
  // PutEnd by the upserting client swaps them at once (a new ObjectId, so no
  // lease or read of the old version counts for the new) and the old buffers
  // stay allocated until the old version's lease ends (Tick frees them).
  // PutRevoke drops the new version. A second upsert supersedes a first not
  // ended yet; the first writer's PutEnd then fails with INVALID_WRITE (as
  // the reference refuses the End of a client whose write was taken over),
  // unless both came from one client, which a PutEnd cannot tell apart.
  Result<msg::PutStartReply> UpsertStart(const msg::PutStartRequest& req, uint64_t now_us);
  Result<std::vector<msg::BatchItem<msg::PutStartReply>>> BatchUpsertStart(
      const std::vector<msg::PutStartRequest>& reqs, uint64_t now_us);

  // Copy and move tasks, run by the client that created them: TaskStart
  // places the target replicas and leases the source, the client copies the
  // bytes, TaskEnd adds the targets to the object (a move then retires the
  // source replica until its lease ends). An object upserted or removed in
  // between fails the task. A task not started or ended within
  // put_timeout_us fails at Tick. `unix_ms`: the wall clock, for TaskInfo.
  Result<msg::TaskId> CreateCopyTask(const msg::CreateCopyTaskRequest& req, uint64_t now_us,
                                     uint64_t unix_ms);
  Result<msg::TaskId> CreateMoveTask(const msg::CreateMoveTaskRequest& req, uint64_t now_us,
                                     uint64_t unix_ms);
  Result<msg::TaskInfo> QueryTask(const msg::TaskRequest& req, uint64_t now_us) const;
  Result<msg::TaskStartReply> TaskStart(const msg::TaskRequest& req, uint64_t now_us);
  Status TaskEnd(const msg::TaskEndRequest& req, uint64_t now_us);

  // The keys whose replicas on req.segment_name (all of them when empty)
  // were cleared; leased, in-flight and missing keys are skipped.
  msg::ReplicaClearReply BatchReplicaClear(const msg::ReplicaClearRequest& req,
                                             uint64_t now_us);
  // Removes the complete keys the ECMAScript pattern finds a match in
  // (leased ones only with force: their buffers are retired until the lease
  // ends); keys with a copy/move task running are skipped. INVALID_PARAMS
  // for a pattern that does not compile.
  Result<msg::RemoveByRegexReply> RemoveByRegex(const msg::RemoveByRegexRequest& req,
                                                 uint64_t now_us);
  // Bytes held by replaced or moved replicas until their readers' leases end.
  uint64_t retired_bytes() const;

  TickReport Tick(uint64_t now_us);

  // master_state_stale.cc: the ranges of the complete objects removed,
  // replaced or evicted (by Remove, RemoveAll, an upsert's end, eviction, a
  // cleared or moved replica, a lost one on a segment that stays) since the
  // last call, while options.track_stale_ranges. The master process retires
  // them on their stores before it answers anything that could hand their
  // space out again or acknowledge their removal.
  std::vector<StaleRange> TakeStaleRanges();
  // The free ranges of the mounted segments, at most `max` from `*cursor`
  // on, in (segment, offset) order; advances the cursor; empty at the end.
  // A master that starts from its journal (or takes over an HA log)
  // retires them before it hands out any space: a RETIRE that failed before
  // the restart left a range free whose old seals may still be cached, and
  // the quarantine that covered it lived in memory only
  // (master_state_quarantine.cc).
  struct FreeCursor {
    uint32_t segment = 0;
    uint64_t offset = 0;
  };
  std::vector<StaleRange> NextFreeRanges(FreeCursor* cursor, size_t max) const;
  void set_track_stale_ranges(bool on) { options_.track_stale_ranges = on; }

  // master_state_quarantine.cc: ranges whose RETIRE failed (masterd/retirer.h)
  // go to no new object until `until_us` (the old object's seals expired)
  // or ReleaseQuarantine of the same range (a later retire succeeded), or
  // until their segment is dropped. NOT_FOUND when no such segment is
  // mounted: its space went with it. `size_bytes` 0: the whole segment.
  Status QuarantineRange(std::string_view segment, uint64_t offset, uint64_t size_bytes,
                         uint64_t until_us);
  void ReleaseQuarantine(std::string_view segment, uint64_t offset, uint64_t size_bytes);
  // True when some byte of the range is quarantined (a reply about to hand
  // it to a writer must not).
  bool InQuarantine(std::string_view segment, uint64_t offset, uint64_t size_bytes) const;
  struct QuarantineStats {
    uint64_t bytes = 0;     // withheld from the free space now
    uint64_t ranges = 0;    // quarantined ranges now
    uint64_t added = 0;     // ranges ever quarantined
    uint64_t merged = 0;    // of them, merged into a neighbour at the bound
    uint64_t expired = 0;   // lifted by time
    uint64_t released = 0;  // lifted by a later successful retire
  };
  QuarantineStats quarantine_stats() const;

  // ---- master_state_tier.cc: offload to the stores' disk tiers ----
  struct OffloadVictim {
    std::string key;
    ObjectId id = 0;
    std::string segment;  // the segment holding its only buffer
    uint64_t offset = 0;
    uint64_t size_bytes = 0;
  };
  // The live segments' bytes, and how many of them are allocated.
  uint64_t capacity_bytes() const { return capacity_bytes_; }
  uint64_t allocated_bytes() const { return allocated_bytes_; }
  // Objects the policy would evict, up to `target_bytes`, whose only
  // replica is one buffer on a segment `offloadable` accepts (its store has
  // a disk tier). The policy forgets each, so nothing evicts it while its
  // store copies it to disk; a remove or upsert meanwhile frees it as
  // usual (CompleteId then no longer names it, and the copy is discarded).
  std::vector<OffloadVictim> TakeOffloadVictims(
      uint64_t target_bytes, uint64_t now_us,
      const std::function<bool(std::string_view segment)>& offloadable);
  // Drops the memory copy of object `id`: its buffers stay allocated until
  // its leases end. `tracked`: the policy still tracks it (not an offload
  // victim, which it forgot when it picked it). False when `id` is gone
  // (removed or replaced meanwhile).
  bool DropMemoryCopy(ObjectId id, uint64_t now_us, bool tracked = false);
  // The id of `key`'s complete object, if any.
  std::optional<ObjectId> CompleteId(std::string_view key) const;

  // Reads tracked for release (tests).
  size_t tracked_reads() const { return reads_.size(); }

  MasterCounters counters() const;

  // Heap bytes of the structures that grow with the objects
  // (master_state_memory.cc): the breakdown behind mooncake-master(1)'s
  // bytes per object. The journal's page cache and the allocator's own
  // overhead are outside it.
  struct MemoryUse {
    size_t index = 0;        // key nodes: record, skip-list links, key bytes
    size_t index_nodes = 0;  // of `index`: the nodes themselves (the rest is free space)
    size_t slots = 0;        // the slot table: node and generation per slot
    size_t policy = 0;       // the eviction policy (EvictionPolicy::memory_bytes)
    size_t in_flight = 0;    // puts in flight, pending upserts, timers, tracked reads
    size_t total() const { return index + slots + policy + in_flight; }
  };
  MemoryUse memory_use() const;
  uint64_t view_version() const { return view_version_; }

  // Durability: dump the state, or rebuild it (e.g. from a journal) into a
  // fresh MasterState. Loading reserves each buffer's exact range, so an
  // overlapping or out-of-range record is refused (INVALID_PARAMS) instead
  // of being double-allocated. Loads do not call the listener.
  std::vector<SegmentDump> DumpSegments() const;
  std::vector<ObjectDump> DumpObjects(bool complete_only) const;
  Status LoadSegment(const SegmentDump& segment, uint64_t now_us);
  Status LoadObject(const ObjectDump& object, uint64_t now_us);
  // The id a mounted segment has in this state (BufferLocation::segment_id).
  std::optional<uint32_t> SegmentIdOf(std::string_view name) const {
    auto it = segment_ids_.find(name);
    if (it == segment_ids_.end()) return std::nullopt;
    return it->second;
  }
  // Bulk reload (a journal at start): between the two calls LoadObject only
  // records where each buffer is; FinishBulkLoad reserves them all at once,
  // sorted per segment, instead of splitting the free lists object by
  // object, and refuses (INVALID_PARAMS, naming both keys) two buffers that
  // overlap. The index is built then too, sorting the keys once (in any
  // order they came), and a key loaded twice is refused (OBJECT_ALREADY_EXISTS).
  // After a failed FinishBulkLoad the state must be discarded.
  // `expected_objects` (an estimate; 0: unknown) sizes the per-object
  // tables once: grown by doubling, each page of them is faulted in twice,
  // and a fresh page costs far more than the copy on some VMs.
  void BeginBulkLoad(size_t expected_objects = 0);
  Status FinishBulkLoad();
  // O(objects + buffers), master_state_check.cc: the index and every
  // segment's allocator hold their own invariants; the slot table, the
  // segment names, the owners' segment lists and the in-flight puts' owners
  // agree with them; every buffer lies in used space of a live segment, no
  // two overlap, and per segment they add up to exactly its used bytes
  // (the counters' allocated and capacity bytes to the sums). Not during a
  // bulk load. INTERNAL_ERROR naming the first broken rule. For tests and
  // MC_DEBUG_CHECK_OK (common/debug_check.h).
  Status CheckInvariants() const;
  // Every known client's silence counts from `now_us`: called once a load
  // is done, since a load of millions of objects can outlast client_ttl,
  // and owners judged by the time it started would be dead on arrival.
  void RestartClientClocks(uint64_t now_us);

 private:
  struct Segment;
  struct Client;
  using ObjectIt = ObjectIndex::iterator;
  struct Timer {  // min-heap entry; stale entries are skipped when popped
    uint64_t at_us;
    ObjectId id;
    bool operator>(const Timer& o) const { return at_us > o.at_us; }
  };

  // master_state.cc
  Status CheckKey(std::string_view key) const;
  ObjectId IdOf(const ObjectRecord& rec) const;
  ObjectIt FindById(ObjectId id);
  // `key` must be absent; `where`: a find of it (see ObjectIndex::Position).
  // `key_hash`: std::hash of the key, if known (a bulk load's).
  ObjectIt InsertObject(std::string_view key, const ObjectIndex::Position* where = nullptr,
                        std::optional<uint64_t> key_hash = std::nullopt);
  void EraseObject(ObjectIt it, RemoveReason reason, bool notify);
  void FreeBuffers(const ObjectRecord& rec, uint64_t* largest_hole);
  // master_state_stale.cc: `rec`'s buffers, or one of them, leave it.
  void NoteStale(const ObjectRecord& rec);
  void NoteStale(uint32_t segment, uint64_t offset, uint64_t size_bytes);
  uint32_t Stripes(uint64_t size_bytes) const;
  uint64_t BufferSize(const ObjectRecord& rec, uint32_t index) const;
  std::vector<msg::ReplicaDesc> DescribeReplicas(const ObjectRecord& rec) const;
  ObjectDump Dump(const ObjectIt& it) const;
  // `reader`: the client of a GetReplicaList, whose release counts; null
  // for ExistKey.
  void GrantLease(ObjectRecord& rec, uint64_t now_us, const msg::ClientId* reader);
  // Forgets tracked reads whose lease ran out, a slice of the table per call.
  void SweepReads(uint64_t now_us);
  bool Leased(const ObjectRecord& rec, uint64_t now_us) const;
  bool Pinned(const ObjectRecord& rec, uint64_t now_us) const;
  bool OwnerAlive(const Segment& seg, uint64_t now_us) const;
  Status CheckPutShape(const msg::PutStartRequest& req) const;
  // Fills a new version (in flight) of `req`'s object from `placed`.
  void SetNewVersion(ObjectRecord& rec, const msg::PutStartRequest& req,
                     const std::vector<uint64_t>& placed, uint64_t now_us);
  // `req.key` must be absent.
  msg::PutStartReply InsertPut(const msg::PutStartRequest& req,
                               const std::vector<uint64_t>& placed, uint64_t now_us,
                               const ObjectIndex::Position* where = nullptr);
  // The object of `key` as objects_.find finds it, an in-flight put's
  // through put_slots_ without a search of the index.
  ObjectIt FindPut(std::string_view key) const;
  // An in-flight put in `slot` of `key` ends (completed or erased).
  void ForgetPut(uint32_t slot, std::string_view key);
  Status DoPutEnd(const msg::KeyRequest& req, uint64_t now_us);
  Status DoPutRevoke(const msg::KeyRequest& req, uint64_t now_us);
  // OK when `client` started the in-flight put in `rec`.
  Status CheckPutOwner(const ObjectRecord& rec, const msg::KeyRequest& req,
                       const char* what) const;

  // master_state_space.cc
  Result<std::vector<uint64_t>> PlaceOrEvict(std::string_view key, uint64_t size_bytes,
                                             uint32_t replicas, uint64_t now_us,
                                             const msg::PutPlacement& placement);
  bool TryPlace(uint64_t size_bytes, uint32_t replicas, uint64_t now_us,
                const msg::PutPlacement& placement, std::vector<uint64_t>* packed);
  std::vector<uint32_t> CandidateSegments(uint64_t now_us) const;
  // Moves the segments `placement` prefers to where TryPlace deals them to
  // their replicas first.
  void Prefer(const msg::PutPlacement& placement, uint32_t replicas,
              std::vector<uint32_t>* cands) const;
  // Evicts one object the policy picks; false when none is evictable.
  bool EvictOne(uint64_t now_us, bool allow_pinned, uint64_t* freed_bytes,
                uint64_t* largest_hole);
  uint64_t EvictBytes(uint64_t target_bytes, uint64_t now_us, uint64_t* keys);
  void DropSegments(const std::vector<uint32_t>& ids);
  // Drops the replicas with a buffer on a segment marked in `dropping`;
  // `segments_stay`: those segments are not going away, so every buffer of
  // a dropped replica is freed (else theirs leave with the segments).
  void DropReplicasOn(ObjectIt it, const std::vector<bool>& dropping, bool segments_stay = false);
  uint64_t ExpireClients(uint64_t now_us, uint64_t* segments);
  uint64_t DiscardZombiePuts(uint64_t now_us);
  uint64_t ExpirePins(uint64_t now_us);
  Status OverlapError(uint32_t segment, uint64_t first_offset, uint64_t second_offset) const;

  // master_state_check.cc (parts of CheckInvariants)
  Status CheckSlots() const;
  Status CheckSegments() const;
  Status CheckBuffers() const;

  // master_state_ops.cc
  struct Pending;  // an upsert's new version, not readable yet
  struct Task;
  struct Retired {  // buffers kept allocated until readers are done
    uint64_t free_at_us;
    uint32_t segment;
    uint64_t offset;
    uint64_t size_bytes;
    // Not 0: no buffer, the deadline of held_[held] (whose buffers these are).
    ObjectId held = 0;
    bool operator>(const Retired& o) const { return free_at_us > o.free_at_us; }
  };
  // Keeps `rec`'s buffers allocated until `free_at_us` (frees them now when
  // that has passed); buffers on segments marked in `dropping` are skipped.
  void RetireBuffers(const ObjectRecord& rec, uint64_t free_at_us, uint64_t now_us,
                     const std::vector<bool>* dropping = nullptr);
  void FreeRetired(uint64_t now_us);
  // master_state_held.cc: a removed or replaced version with tracked reads
  // keeps its buffers until those reads are released or its lease ends,
  // whichever comes first. False (nothing done) when it has none to wait for.
  struct Held;
  bool HoldForReaders(const ObjectRecord& rec, std::string_view key, uint64_t now_us);
  void FreeHeld(ObjectId id);
  // A release that matched no read of the key's current version.
  void ReleaseHeld(const msg::KeyRequest& req, uint64_t now_us);
  // `reader` reads `rec` while it holds a read of a held version of its key.
  void CheckHeldReads(const msg::ClientId& reader, ObjectRecord& rec, uint64_t now_us);
  void DropHeldOn(const std::vector<bool>& dropping);
  // master_state_supersede.cc: writers whose upsert or put of a key a later
  // upsert by another client took over, until their put's deadline: their
  // PutEnd fails (INVALID_WRITE) instead of answering OK for a version that
  // never became the key's. Bounded: past kMaxSuperseded, not noted.
  static constexpr size_t kMaxSuperseded = 1 << 16;
  struct Superseded {
    msg::ClientId writer;
    uint64_t until_us;
  };
  void NoteSuperseded(std::string_view key, const msg::ClientId& writer,
                      const msg::ClientId& by, uint64_t until_us);
  // Forgets `writer`'s mark on `key` (it starts another write of it); true
  // when it had one still in force at `now_us`.
  bool TakeSuperseded(std::string_view key, const msg::ClientId& writer, uint64_t now_us);
  bool IsSuperseded(std::string_view key, const msg::ClientId& writer, uint64_t now_us) const;
  void ExpireSuperseded(uint64_t now_us);
  // Erases the object, retiring its buffers until its lease ends.
  void RetireObject(ObjectIt it, RemoveReason reason, uint64_t now_us);
  // Marks a just-written object complete: pins, policy, listener.
  void Complete(ObjectIt it, uint64_t now_us);
  // PutEnd / PutRevoke of an upsert's pending version, if `req` has one.
  bool EndPendingUpsert(ObjectIt it, const msg::KeyRequest& req, uint64_t now_us);
  bool RevokePendingUpsert(ObjectIt it, const msg::KeyRequest& req);
  // The object in slot `slot` leaves: its pending upsert's buffers are
  // retired until that upsert's deadline (its writer's grants expire then).
  void DiscardPendingUpsert(uint32_t slot);
  Result<msg::PutStartReply> UpsertExisting(ObjectIt it, const msg::PutStartRequest& req,
                                            uint64_t now_us);
  Result<std::vector<uint64_t>> PlaceOn(uint32_t segment, uint64_t size_bytes);
  Result<msg::TaskId> AddTask(msg::TaskType type, ObjectIt it, const msg::ClientId& client,
                              std::string source, std::vector<std::string> targets,
                              uint64_t now_us, uint64_t unix_ms);
  void FailTask(Task& task, std::string why, uint64_t now_us);
  Status FinishTask(Task& task, uint64_t now_us);
  void ExpireTasks(uint64_t now_us);
  // DropSegments' part: forget retired buffers, pending upserts and task
  // targets on the dropped segments.
  void DropPendingOn(const std::vector<bool>& dropping);
  // master_state_quarantine.cc
  void ExpireQuarantine(uint64_t now_us);
  void DropQuarantineOn(const std::vector<bool>& dropping);
  void LiftQuarantine(size_t index);
  bool HasRunningTask(ObjectId id) const;

  // What the policy reads of a live object instead of keeping copies.
  class PolicyFacts final : public ObjectFacts {
   public:
    explicit PolicyFacts(const MasterState& state) : state_(state) {}
    ObjectId IdAt(uint32_t slot) const override;
    uint64_t KeyHashAt(uint32_t slot) const override;
    uint64_t SizeAt(uint32_t slot) const override;

   private:
    const MasterState& state_;
  };

  Options options_;
  PolicyFacts policy_facts_{*this};
  std::unique_ptr<EvictionPolicy> policy_;
  StateListener* listener_;

  ObjectIndex objects_;
  // The slot table, by slot: each object's node handle (0: a free slot,
  // see ObjectIndex::HandleOf) and the slot's generation, which makes
  // ObjectId = generation << 32 | slot stale once the object is gone. Two
  // arrays of 4-byte entries: 8 bytes an object, not 16.
  std::vector<uint32_t> slot_nodes_;
  ObjectIndex::Node* NodeAt(uint32_t slot) const { return objects_.NodeAt(slot_nodes_[slot]); }
  std::vector<uint32_t> slot_generations_;
  std::vector<uint32_t> free_slots_;
  std::vector<Timer> put_deadlines_;  // in-flight puts, min-heap
  // Who started each in-flight put, by slot: only that client may end or
  // revoke it. Kept beside the records so complete objects pay nothing.
  std::unordered_map<uint32_t, msg::ClientId> put_owners_;
  // The slots of in-flight puts by key hash (one per hash: a second key of
  // the same hash is found by a search), so a PutEnd or PutRevoke costs no
  // search of the index: with put_owners_, only puts in flight pay for it.
  std::unordered_map<uint64_t, uint32_t> put_slots_;
  std::vector<Timer> pin_expiries_;   // live soft pins, min-heap

  // Reads not released yet, by client and object: their number and the
  // lease of the last one. Only a release within that lease counts.
  struct ReadKey {
    msg::ClientId client;
    ObjectId object;
    bool operator==(const ReadKey&) const = default;
  };
  struct ReadKeyHash {
    size_t operator()(const ReadKey& k) const {
      return static_cast<size_t>((k.client.hi ^ (k.client.lo * 0x9e3779b97f4a7c15ull)) +
                                 k.object * 0xc2b2ae3d27d4eb4full);
    }
  };
  struct ReadGrant {
    uint64_t deadline_us = 0;
    uint32_t count = 0;
  };
  static constexpr size_t kMaxTrackedReads = 1 << 20;  // beyond: leases end by time
  std::unordered_map<ReadKey, ReadGrant, ReadKeyHash> reads_;
  size_t read_sweep_bucket_ = 0;

  std::vector<std::unique_ptr<Segment>> segments_;  // by id; null: free id
  std::vector<uint32_t> free_segment_ids_;
  std::map<std::string, uint32_t, std::less<>> segment_ids_;
  std::map<msg::ClientId, Client> clients_;

  // LoadObject's scratch (see there).
  std::vector<uint64_t> load_packed_;
  std::vector<uint64_t> load_sizes_;
  std::vector<uint32_t> load_mine_;
  std::vector<bool> load_used_segment_;
  bool bulk_loading_ = false;
  // From BeginBulkLoad until FinishBulkLoad's Build: the objects' nodes are
  // in slot_nodes_ only (no list of them of its own: 8 bytes an object, at
  // 50M objects 400 MB of fresh pages), not yet in the index.
  bool bulk_unlinked_ = false;
  // The buffers of the objects loaded in bulk, as FinishBulkLoad sorts
  // them, appended as they load (a second pass over 50M nodes cost more).
  std::vector<std::pair<uint64_t, uint64_t>> bulk_ranges_;
  // During a bulk load: faults in the tables and the index's chunks ahead
  // of the loading thread (common/prefault.h).
  std::unique_ptr<Prefaulter> bulk_prefaulter_;

  std::unordered_map<uint32_t, std::unique_ptr<Pending>> pending_upserts_;  // by slot
  std::vector<Retired> retired_;  // min-heap by free_at_us
  std::unordered_map<ObjectId, std::unique_ptr<Held>> held_;  // see HoldForReaders
  std::map<std::string, std::vector<ObjectId>, std::less<>> held_keys_;  // held_ by key
  std::map<std::string, std::vector<Superseded>, std::less<>> superseded_;  // by key
  size_t superseded_count_ = 0;
  StaleRanges stale_;             // see TakeStaleRanges
  struct QuarantineEntry {
    uint32_t segment;
    uint64_t offset, size_bytes, until_us;
  };
  std::vector<QuarantineEntry> quarantine_;  // see QuarantineRange
  QuarantineStats quarantine_counts_;         // bytes, ranges: computed
  uint64_t retired_bytes_ = 0;
  std::map<msg::TaskId, std::unique_ptr<Task>> tasks_;
  uint64_t next_task_ = 0;

  uint64_t allocated_bytes_ = 0;
  uint64_t capacity_bytes_ = 0;
  bool puts_evicted_since_tick_ = false;  // see BackgroundEvictionBytes
  uint64_t soft_pinned_count_ = 0;
  uint64_t view_version_ = 1;
  MasterCounters counters_;
};

}  // namespace mc::master

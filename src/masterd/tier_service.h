// TierService: the master's side of the stores' disk tiers (issue 31).
//
// Keeps the disk replicas (master::DiskReplicas) and one queue of work per
// store, which the store's disk-tier worker asks for (TierPoll, held by the
// RPC server until work is queued: TakeWake() tells the service to wake
// it) and answers with results in its next call. Three kinds of work:
// - offload: memory is kept at or under its high watermark counting what
//   is being written to disk as gone (OffloadAhead, at every put and each
//   tick): objects the eviction policy picks whose only copy is one buffer
//   on a store with a disk tier are written by that store from its own
//   segment to its disk (no network copy); once it reports success the
//   master drops the memory copy and keeps the disk replica. A put
//   (PutStart, BatchPutStart, BatchUpsertStart) that finds too little free
//   memory while offloads are in flight waits for
//   them (the service parks it, at most kMaxPutHoldUs) instead of evicting
//   objects that were about to reach the disk. A failed write (no space,
//   I/O error) is a WARN and a counted failure, and the object is evicted
//   as it would have been without a disk tier.
// - stage: a get of an object whose only copy is on disk places a memory
//   copy on that disk's store (a put by the master itself) and asks the
//   store to read the file into it; the reader is told to ask again
//   (REPLICA_IS_NOT_READY, msg::kStagingFromDisk) and then reads the memory
//   copy over any path (TCP, same host, RDMA). Unless promoted (see
//   PromotionGate) the memory copy is dropped kStagedKeepUs after it is
//   ready (its readers' leases keep its bytes until they end).
// - delete: a key removed, replaced or evicted from a full disk (LRU per
//   disk), or announced by a store the master has no record for.
// Not thread-safe: MasterService calls it under its lock, with its state.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "config/config.h"
#include "master/disk_replicas.h"
#include "master/master_state.h"
#include "msg/tier_messages.h"

namespace mc::masterd {

struct TierCounters {
  uint64_t offloads = 0, offload_bytes = 0;
  uint64_t offload_failures = 0;  // writes a store refused or failed: evicted instead
  uint64_t stages = 0, stage_bytes = 0;  // disk reads into memory
  uint64_t promotions = 0;               // staged copies kept in memory
  uint64_t disk_evictions = 0;           // dropped from a full disk
  uint64_t checksum_failures = 0;        // disk replicas dropped for a bad checksum
  uint64_t io_errors = 0;                // reads and writes that failed otherwise
  uint64_t readopted = 0;                // announced objects the master kept
  uint64_t refused_at_announce = 0;      // announced objects it told the store to delete
  uint64_t polls = 0;                    // TierFetch and TierPoll calls answered
  uint64_t held_puts = 0;                // puts that waited for offloads (parked)
  uint64_t dropped = 0;                  // evicted from memory with no disk copy (lost)
};

class TierService {
 public:
  // A memory copy staged for a read and not promoted stays this long.
  static constexpr uint64_t kStagedKeepUs = 2'000'000;
  // How long a store's worker waits before asking again when idle and the
  // master cannot hold its call (TierFetch, or TierPoll outside a server).
  static constexpr uint32_t kIdleWaitMs = 20;
  // Longest a put waits for offloads in flight to free its room; then it
  // evicts as without a disk tier. Well under a client's RPC timeout.
  static constexpr uint64_t kMaxPutHoldUs = 1'000'000;
  // Reads from disk of the same key within this window promote it.
  static constexpr uint64_t kPromotionWindowUs = 60'000'000;
  // Work queued per store, at most: beyond, offloads wait for the next tick.
  static constexpr size_t kMaxQueuedPerStore = 4096;

  explicit TierService(const MasterConfig& config);

  // Offload at the high watermark, work that timed out, staged copies due.
  void Tick(master::MasterState& state, uint64_t now_us);
  // Before a put of `need_bytes` (all replicas): offloads what keeps memory,
  // this put included, at or under its high watermark once the writes in
  // flight are done. True when the put should wait for them: it does not
  // fit in free memory now and offloads are in flight.
  bool OffloadAhead(master::MasterState& state, uint64_t need_bytes, uint64_t now_us);
  // True once since work was queued or memory freed: the service wakes the
  // calls parked on it (stores' polls, held puts).
  bool TakeWake() { return std::exchange(wake_, false); }
  // An object left memory: counted as dropped when it has no disk copy.
  void OnEvicted(std::string_view key) {
    if (!OnDisk(key)) ++counters_.dropped;
  }
  void CountPoll() { ++counters_.polls; }
  void CountHeldPut() { ++counters_.held_puts; }
  // Bytes a read of `key` would stage into memory: its disk copy's when it
  // is on disk only and not being staged already.
  uint64_t StageBytes(const master::MasterState& state, const std::string& key) const;
  // A read missed memory (`missed`: the state's error for it): staging from
  // disk starts, or has, when a disk replica is readable.
  Status OnReadMiss(master::MasterState& state, const std::string& key, const Status& missed,
                    uint64_t now_us);
  // A read hit memory: its disk replica, if any, is fresh again.
  void OnReadHit(const std::string& key);
  bool OnDisk(std::string_view key) const { return disks_.Find(key) != nullptr; }
  // `key` was removed or is being replaced: its disk replica goes too.
  // True when it had one.
  bool Forget(const std::string& key);
  // Every disk replica goes (RemoveAll); returns how many.
  uint64_t ForgetAll();
  void OnSegmentGone(const std::string& segment_name);

  Result<msg::TierAnnounceReply> Announce(const msg::TierAnnounceRequest& req);
  Result<msg::TierFetchReply> Fetch(master::MasterState& state, const msg::TierFetchRequest& req,
                                    uint64_t now_us);

  const master::DiskReplicas& disks() const { return disks_; }
  // The journal's load: a disk replica recorded before the restart.
  void Load(const std::string& key, const std::string& disk_id, uint64_t size_bytes);
  const TierCounters& counters() const { return counters_; }

  // The journal: disk replicas added and removed since the last call.
  struct Change {
    std::string key;
    std::string disk_id;  // empty: removed
    uint64_t size_bytes = 0;
  };
  std::vector<Change> TakeChanges();

 private:
  struct InFlight {
    msg::TierWorkKind kind;
    std::string key;
    std::string segment;
    master::ObjectId id = 0;  // offload: the object written
    uint64_t size_bytes = 0;
    uint64_t deadline_us = 0;
    bool promote = false;     // stage: keep the copy in memory
  };
  uint64_t Queue(const std::string& segment, msg::TierWorkKind kind, const std::string& key,
                 uint64_t offset, uint64_t size_bytes);
  void QueueDeletes(const std::string& segment, const std::vector<std::string>& keys);
  void Offload(master::MasterState& state, uint64_t target_bytes, uint64_t now_us);
  void Apply(master::MasterState& state, const std::string& segment, const msg::TierResult& r,
             uint64_t now_us);
  void Finish(master::MasterState& state, const InFlight& f, const Status& st, uint64_t now_us);
  bool Staging(const std::string& key) const;
  void Record(const std::string& key, const std::string& disk_id, uint64_t size_bytes);
  void Unrecord(const std::string& key);

  MasterConfig config_;
  master::DiskReplicas disks_;
  master::PromotionGate gate_;
  std::map<std::string, std::deque<msg::TierWork>> queues_;  // by segment name
  std::map<uint64_t, InFlight> in_flight_;                    // by ticket
  std::map<std::string, uint64_t> staging_;                   // key -> ticket
  std::map<std::string, std::pair<master::ObjectId, uint64_t>> staged_;  // key -> id, drop at
  std::map<std::string, std::vector<std::string>> announcing_;  // disk id -> keys so far
  uint64_t offloading_bytes_ = 0;
  // File bytes of the offloads in flight, per segment: the room their disk
  // keeps for them.
  std::map<std::string, uint64_t> offloading_file_bytes_;
  uint64_t next_ticket_ = 1;
  bool wake_ = false;
  std::vector<Change> changes_;
  TierCounters counters_;
};

}  // namespace mc::masterd

// HaLog: the leader's side of the HA log. A master::StateListener (like the
// SQLite journal, it hears every durable change under the master's lock and
// only queues it) and the RPC server's ReplyGate: a sequencer thread cuts
// whatever has queued into the next log entry (group commit, bounded by
// records and bytes) and hands it to one of `entries_in_flight` shipper
// threads, each with its own etcd connection, which writes it in one fenced
// txn (ha::FencedLog::Append). So several entries are in etcd's hands at
// once (etcd batches concurrent proposals into one raft round and fsync).
// An entry is cut at once when none is in flight; while some are, only
// once as many records wait as are in flight (and at least
// pipeline_min_records), and never while every shipper is busy: meanwhile
// the queue grows into a bigger next entry. The load sizes the batches,
// and a txn (which costs CPU on every etcd member) carries either a
// waiting client's change at once or many changes. One timer: under load
// (the last entry held at least kHaLingerMinRecords) an entry is cut only
// once its oldest change waited `linger_us` (or kHaLingerMaxRecords wait),
// so a busy leader sends etcd fewer, larger entries; a light load never
// waits for it.
//
// Entries may land out of order; replies are released in log order only:
// Released() covers the records of entry n once n and every entry before it
// are in etcd, so a reply that reveals a change leaves only once the change
// and everything it could depend on are durable. The committed log is the
// gap-free prefix of entries after the snapshot; an entry past a gap
// (written while an earlier one was not, at most entries_in_flight - 1 of
// them) was never acknowledged: standbys stop at the gap (FollowHaLog) and
// the next leader deletes such entries before it writes
// (ha::FencedLog::DropAfter).
// After each committed entry the sequencer applies it to its HaImage in
// order and, every `snapshot_every_entries`, writes the image out as a
// snapshot, which a writer thread of its own publishes (trimming the log)
// while entries go on being cut; one snapshot at a time, a due one waits
// for the last to be written.
//
// When etcd refuses an entry as fenced (another master leads; the compare
// is per txn, so every entry a deposed leader still has in flight is
// refused), refuses it for any other reason, or Fail() is called (the lease
// ran out), the log fails for good: held replies are dropped with their
// connections and the master must step down, whatever later entries
// landed. When etcd does not answer, the shipper retries the same entry
// (replies wait meanwhile): an entry that landed although its reply was
// lost is found by reading it back.
//
// Thread-safe: StateListener calls under the master's lock, the gate's from
// the RPC server's threads, the sequencer and shippers on their own threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "ha/fenced_log.h"
#include "master/state_listener.h"
#include "masterd/ha_image.h"
#include "masterd/prometheus.h"
#include "rpc/server.h"

namespace mc::masterd {

// Most records one entry takes; more wait for the next (with
// ha::kMaxLogEntryBytes, whichever is reached first).
constexpr size_t kMaxRecordsPerHaEntry = 1u << 16;
// How long the writer waits before it retries an entry etcd did not answer.
constexpr uint64_t kHaRetryBackoffUs = 20000;

// Entries in etcd's hands at once by default ([ha] entries_in_flight):
// one, with [ha] linger (see LingerUntilUs for the figures). More keep
// etcd's pipeline full when its round trips, not its CPU, bound the log.
constexpr uint32_t kDefaultHaEntriesInFlight = 1;

// While entries are in flight, the next is cut only once at least this
// many records wait, and kHaPipelineBarFactor times as many as are in
// flight (see CanCut).
constexpr uint32_t kDefaultHaPipelineMinRecords = 8;
constexpr uint64_t kHaPipelineBarFactor = 3;

// Linger ([ha] linger): the last entry's records from which the leader
// counts as loaded, and the queue that is cut at once whatever it waited.
constexpr uint64_t kHaLingerMinRecords = 32;
constexpr size_t kHaLingerMaxRecords = 8192;

struct HaLogOptions {
  uint64_t snapshot_every_entries = 10000;
  uint32_t entries_in_flight = kDefaultHaEntriesInFlight;  // 1..kMaxHaEntriesInFlight
  uint32_t pipeline_min_records = kDefaultHaPipelineMinRecords;  // >= 1
  // While entries are in flight, the next also waits for
  // kHaPipelineBarFactor times the records they hold (off:
  // pipeline_min_records alone; tests that want an entry per record).
  bool bar_in_flight = true;
  // Each entry deflated by its shipper before it goes to etcd
  // (CompressHaEntry; [ha] compress_log). Off: plain entries, which a
  // master from before compression can follow.
  bool compress = true;
  // Under load, how long the oldest queued change waits before its entry
  // is cut (see above); 0: cut as soon as a shipper is free. Off here
  // ([ha] linger sets it): tests on a manual clock would wait forever.
  uint64_t linger_us = 0;
};

class HaLog final : public master::StateListener,
                    public DiskReplicaListener,
                    public rpc::ReplyGate {
 public:
  // `kv` is the snapshot writer's etcd connection; `shipper_kvs` one
  // per shipper (options.entries_in_flight of them), or empty: every
  // shipper uses `kv` too (tests, where the fake etcd is thread-safe and
  // does not serialize). They and `clock` must outlive this.
  HaLog(ha::EtcdKv& kv, ha::HaKeys keys, const Clock& clock, HaLogOptions options,
        std::vector<ha::EtcdKv*> shipper_kvs = {});
  ~HaLog() override;  // stops the threads (what is queued is not shipped)

  // Starts shipping under `term`, the next entry being image.index() + 1.
  void Begin(const ha::Term& term, HaImage image);
  // The lease ran out (or the master stops leading): fail for good.
  void Fail(const std::string& why);
  // Until when the leader's lease is proven (ha::LeaseClock). A round of
  // requests handled at or after it gets no reply (Ticket fails the log):
  // a leader paused past its lease (a stop, a long stall) serves nothing,
  // not even a read, before its own loop notices. 0: not set.
  void SetLeaseDeadline(uint64_t deadline_us) {
    lease_deadline_us_.store(deadline_us, std::memory_order_release);
  }
  // Waits up to `timeout_us` for everything queued so far to be in etcd.
  bool WaitDurableFor(uint64_t timeout_us);

  // master::StateListener (under the master's lock).
  void OnSegmentMounted(const master::SegmentDump& segment) override;
  void OnSegmentUnmounted(std::string_view segment_name) override;
  uint64_t OnObjectCommitted(const master::ObjectDump& object) override;
  void OnObjectRemoved(std::string_view key, uint64_t listener_tag,
                       master::RemoveReason reason) override;
  // DiskReplicaListener (under the master's lock; ha_tier_records.cc).
  void OnDiskReplica(const std::string& key, const std::string& disk_id,
                     uint64_t size_bytes) override;
  void OnDiskReplicaRemoved(const std::string& key) override;

  // rpc::ReplyGate.
  uint64_t Ticket(uint64_t requests) override;
  uint64_t Released() const override { return durable_seen_.load(std::memory_order_acquire); }
  bool Failed() const override { return failed_.load(std::memory_order_acquire); }
  void Subscribe(std::function<void()> wake) override;
  void Unsubscribe() override;

  struct Stats {
    uint64_t appended = 0;   // records queued
    uint64_t durable = 0;    // records in etcd
    uint64_t entry_index = 0;  // the last entry written
    uint64_t entries = 0;    // entries written by this leader
    uint64_t snapshots = 0;
    uint64_t snapshot_index = 0;
    uint64_t retries = 0;    // entries sent again after etcd did not answer
    uint64_t in_flight_max = 0;  // most entries in etcd's hands at once
    // Entries cut with n entries in the window (itself included) at
    // cuts_by_in_flight[n - 1]; entries_in_flight of them.
    std::vector<uint64_t> cuts_by_in_flight;
    double last_commit_seconds = 0;
    double queue_wait_seconds = 0;  // an entry's first record queued to the entry sent
    double encode_seconds = 0;
    double compress_seconds = 0;  // the shippers' CompressHaEntry calls
    uint64_t plain_bytes = 0;     // entries' encoded bytes
    uint64_t shipped_bytes = 0;   // what went to etcd for them (compressed or not)
    // Per entry: its etcd txn (the shipper's call, retries included), and
    // from its first record queued until it and every entry before it were
    // in etcd (the longest any change in it held its reply back).
    // commit_latency.sum is the etcd txn time summed over entries.
    SecondsHistogram commit_latency;
    SecondsHistogram durable_latency;
    std::string failure;
  };
  Stats stats() const;

 private:
  // An entry from cut to committed (window_).
  struct Entry {
    uint64_t index = 0;
    uint64_t record_end = 0;  // the sequence number of its last record
    uint64_t queued_us = 0;   // when its first record was queued
    std::vector<HaRecord> records;
    std::string data;
    bool sending = false;
    bool committed = false;
  };
  void Append(master::StateListener* self, HaRecord record);  // under the master's lock
  void SequencerLoop();
  void ShipperLoop(ha::FencedLog* log);
  // Cuts the next entry from pending_ (mu_ held by `lock`, released while
  // encoding); false when nothing was pending.
  bool CutEntry(std::unique_lock<std::mutex>& lock);
  // Ships `entry` as entry `index`; false when the log failed.
  bool Ship(ha::FencedLog& log, uint64_t index, const std::string& entry);
  // Marks entry `index` committed and releases the gap-free prefix (mu_ held).
  void Committed(uint64_t index, double seconds);
  bool Stopped() const;  // stopping_ or failed_ (mu_ held)
  bool CanCut() const;  // mu_ held
  // Until when (our clock) a loaded leader lingers before it cuts the
  // queue; 0: it does not (mu_ held).
  uint64_t LingerUntilUs() const;
  void Wake();
  // Counts `new_entries` applied to the image and, when a snapshot is due
  // and none is being written, writes the image out and hands it to the
  // snapshot writer (sequencer thread, mu_ not held).
  void MaybeSnapshot(uint64_t new_entries);
  bool SnapshotDue() const;  // mu_ held
  void SnapshotWriterLoop();

  ha::EtcdKv& kv_;
  const ha::HaKeys keys_;
  ha::FencedLog log_;  // the snapshot writer's
  std::vector<ha::FencedLog> shipper_logs_;
  const Clock& clock_;
  const HaLogOptions options_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // the sequencer: records queued, entries committed
  std::condition_variable ship_cv_;  // shippers: an entry to send
  std::condition_variable backoff_cv_;  // a shipper waiting to send an entry again
  std::condition_variable done_cv_;
  std::vector<HaRecord> pending_;   // under mu_
  uint64_t last_cut_records_ = 0;   // under mu_: records in the last entry cut
  uint64_t pending_since_us_ = 0;   // under mu_: when pending_ last became non-empty
  uint64_t appended_ = 0;           // under mu_
  uint64_t cut_ = 0;                // under mu_: records cut into entries
  uint64_t last_free_ = 0;          // under mu_: the last queued change that freed space
  uint64_t durable_ = 0;            // under mu_
  uint64_t next_index_ = 0;         // under mu_: the index of the last entry cut
  std::deque<Entry> window_;        // under mu_: entries cut, not yet all committed before
  std::vector<Entry> to_apply_;     // under mu_: committed, in order, for the image
  bool stopping_ = false;           // under mu_
  bool started_ = false;            // under mu_
  Stats stats_;                     // under mu_
  std::atomic<uint64_t> durable_seen_{0};
  std::atomic<bool> failed_{false};
  std::atomic<uint64_t> lease_deadline_us_{0};

  ha::Term term_;   // set before the threads start
  HaImage image_;   // sequencer thread
  // A snapshot written out by the sequencer, for the writer to put in etcd.
  struct SnapshotJob {
    uint64_t index = 0;
    size_t segments = 0;
    size_t objects = 0;
    uint64_t start_us = 0;
    std::string bytes;
  };
  uint64_t since_snapshot_ = 0;  // under mu_: entries applied since the last snapshot was taken
  bool snapshot_busy_ = false;   // under mu_: taken and not yet written (or failed)
  std::optional<SnapshotJob> snapshot_job_;  // under mu_
  std::condition_variable snapshot_cv_;      // the writer: a job, or stop

  std::mutex wake_mu_;
  std::vector<std::function<void()>> wakes_;  // under wake_mu_
  std::thread sequencer_;
  std::thread snapshot_writer_;  // log_'s only user
  std::vector<std::thread> shippers_;
};

}  // namespace mc::masterd

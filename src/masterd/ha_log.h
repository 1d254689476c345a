// HaLog: the leader's side of the HA log. A master::StateListener (like the
// SQLite journal, it hears every durable change under the master's lock and
// only queues it) and the RPC server's ReplyGate: one writer thread ships
// whatever has queued as one log entry (group commit) in one fenced etcd txn
// (ha::FencedLog::Append), so a reply that reveals a change leaves only once
// the change is in etcd, and a deposed leader's entry is refused by etcd.
// After each commit the writer applies the entry to its HaImage and, every
// `snapshot_every_entries`, publishes the image as a snapshot, which trims
// the log.
//
// When etcd refuses an entry as fenced (another master leads), or Fail() is
// called (the lease ran out), the log fails for good: held replies are
// dropped with their connections and the master must stop. When etcd does
// not answer, the writer retries the same entry (replies wait meanwhile):
// an entry that landed although its reply was lost is found by reading it
// back.
//
// Thread-safe: StateListener calls under the master's lock, the gate's from
// the RPC server's threads, the writer on its own thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "ha/fenced_log.h"
#include "master/state_listener.h"
#include "masterd/ha_image.h"
#include "rpc/server.h"

namespace mc::masterd {

// Most records one entry takes; more wait for the next (with
// ha::kMaxLogEntryBytes, whichever is reached first).
constexpr size_t kMaxRecordsPerHaEntry = 1u << 16;
// How long the writer waits before it retries an entry etcd did not answer.
constexpr uint64_t kHaRetryBackoffUs = 20000;

struct HaLogOptions {
  uint64_t snapshot_every_entries = 10000;
};

class HaLog final : public master::StateListener, public rpc::ReplyGate {
 public:
  // `kv` is the writer's own etcd connection; it and `clock` must outlive this.
  HaLog(ha::EtcdKv& kv, ha::HaKeys keys, const Clock& clock, HaLogOptions options);
  ~HaLog() override;  // stops the writer (what is queued is not shipped)

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
    double commit_seconds = 0;  // summed over entries
    double last_commit_seconds = 0;
    std::string failure;
  };
  Stats stats() const;

 private:
  void Append(master::StateListener* self, HaRecord record);  // under the master's lock
  void WriterLoop();
  // Ships `entry` as entry `index`; false when the log failed.
  bool Ship(uint64_t index, const std::string& entry);
  void Wake();
  void MaybeSnapshot();

  ha::FencedLog log_;
  const Clock& clock_;
  const HaLogOptions options_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::vector<HaRecord> pending_;   // under mu_
  uint64_t appended_ = 0;           // under mu_
  uint64_t last_free_ = 0;          // under mu_: the last queued change that freed space
  uint64_t durable_ = 0;            // under mu_
  bool stopping_ = false;           // under mu_
  bool started_ = false;            // under mu_
  Stats stats_;                     // under mu_
  std::atomic<uint64_t> durable_seen_{0};
  std::atomic<bool> failed_{false};
  std::atomic<uint64_t> lease_deadline_us_{0};

  ha::Term term_;   // writer thread (set before it starts)
  HaImage image_;   // writer thread
  uint64_t since_snapshot_ = 0;  // writer thread

  std::mutex wake_mu_;
  std::vector<std::function<void()>> wakes_;  // under wake_mu_
  std::thread writer_;
};

}  // namespace mc::masterd

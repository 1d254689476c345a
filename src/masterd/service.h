// MasterService: the master's request handling around its state machine.
//
// The RPC server's Handler: each operation calls MasterState under one mutex
// with the current time, and every buffer descriptor handed out is signed
// with the owning segment's access key (a transfer capability, see
// common/capability.h). Also runs the periodic Tick. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "config/config.h"
#include "master/master_state.h"
#include "masterd/disk_replica_listener.h"
#include "rpc/handler.h"
#include "rpc/parking.h"

namespace mc::masterd {

// The state machine's share of the [master] settings.
master::Options MasterOptions(const MasterConfig& config);

class MasterService final : public rpc::Handler {
 public:
  MasterService(const MasterConfig& config, const Clock& clock,
                master::StateListener* listener = nullptr);
  ~MasterService() override;

  // rpc::Handler: every operation of proto/ops.h.
  Status MountSegment(const msg::MountSegmentRequest& req) override;
  Status UnmountSegment(const msg::UnmountSegmentRequest& req) override;
  Result<msg::PingReply> Ping(const msg::PingRequest& req) override;
  Result<msg::PutStartReply> PutStart(const msg::PutStartRequest& req) override;
  Status PutEnd(const msg::KeyRequest& req) override;
  Status PutRevoke(const msg::KeyRequest& req) override;
  Result<msg::GetReplicaListReply> GetReplicaList(const msg::KeyRequest& req) override;
  Result<bool> ExistKey(const msg::KeyRequest& req) override;
  Status Remove(const msg::RemoveRequest& req) override;
  Result<msg::RemoveAllReply> RemoveAll(const proto::Empty&) override;
  Result<msg::RemoveAllReply> RemoveAllEx(const msg::RemoveAllRequest& req) override;
  // Keys on a disk tier only are listed too (replicas 0): ListKeysTiered's list.
  Result<msg::ListKeysReply> ListKeys(const msg::ListKeysRequest& req) override;
  Result<msg::ClusterStatusReply> ClusterStatus(const proto::Empty&) override;
  Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> BatchPutStart(
      const msg::Batch<msg::PutStartRequest>& req) override;
  // BatchPutStart: the placement rides in each request's options.
  Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> BatchPutStartEx(
      const msg::Batch<msg::PutStartExRequest>& req) override;
  Result<msg::Batch<Status>> BatchPutEnd(const msg::Batch<msg::KeyRequest>& req) override;
  Result<msg::Batch<Status>> BatchPutRevoke(const msg::Batch<msg::KeyRequest>& req) override;
  Result<msg::Batch<msg::BatchItem<msg::GetReplicaListReply>>> BatchGetReplicaList(
      const msg::Batch<msg::KeyRequest>& req) override;
  Result<msg::Batch<msg::BatchItem<bool>>> BatchExistKey(
      const msg::Batch<msg::KeyRequest>& req) override;
  // Remove once per element.
  Result<msg::Batch<Status>> BatchRemove(const msg::Batch<msg::RemoveRequest>& req) override;
  Status ReleaseLeases(const msg::Batch<msg::KeyRequest>& req) override;
  // Adds a client's report to the per-path totals; rows of a path or
  // direction this master does not know are ignored.
  Status ReportTransfers(const msg::TransferReport& req) override;
  Status ReportAccesses(const msg::AccessReport& req) override;
  // service_ops.cc: the replica operations (MasterState's, with grants:
  // write grants for an upsert's and a task's new buffers, a read grant for
  // a task's source replica).
  Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> BatchUpsertStart(
      const msg::Batch<msg::PutStartExRequest>& req) override;
  Result<msg::TaskId> CreateCopyTask(const msg::CreateCopyTaskRequest& req) override;
  Result<msg::TaskId> CreateMoveTask(const msg::CreateMoveTaskRequest& req) override;
  Result<msg::TaskInfo> QueryTask(const msg::TaskRequest& req) override;
  Result<msg::TaskStartReply> TaskStart(const msg::TaskRequest& req) override;
  Status TaskEnd(const msg::TaskEndRequest& req) override;
  Result<msg::ReplicaClearReply> BatchReplicaClear(const msg::ReplicaClearRequest& req) override;
  Result<msg::RemoveByRegexReply> RemoveByRegex(const msg::RemoveByRegexRequest& req) override;
  // service_tier.cc: the stores' disk tiers (TierService; NOT_SUPPORTED
  // without --enable-offload).
  Result<msg::TierAnnounceReply> TierAnnounce(const msg::TierAnnounceRequest& req) override;
  Result<msg::TierFetchReply> TierFetch(const msg::TierFetchRequest& req) override;
  // TierFetch that the RPC server holds (rpc::ParkCall) until work is queued
  // for the store or its wait is over.
  Result<msg::TierFetchReply> TierPoll(const msg::TierPollRequest& req) override;
  // ListKeys with each key's tier (service_tier.cc).
  Result<msg::TieredListKeysReply> ListKeysTiered(const msg::ListKeysRequest& req) override;
  // Woken when the disk tier queued work or freed memory: the RPC server's
  // lot for the calls parked above and for puts waiting on offloads.
  rpc::ParkingLot& parking() { return parking_; }
  // Before serving: the disk replicas the journal recorded, and the journal
  // that records them from now on (null: --data-dir none, nothing kept).
  Status LoadTier(class Journal* journal);
  // The same from any source: `load` visits the durable disk replicas (an
  // HA image's), `records` keeps them from now on (the HA log).
  Status LoadTier(DiskReplicaListener* records, const DiskReplicaLoader& load,
                  const std::string& source);
  // The disk tier's figures and records (null without --enable-offload),
  // read under the lock.
  template <typename Fn>
  auto WithTier(Fn&& fn) const {
    std::lock_guard<std::mutex> lock(mu_);
    return fn(tier_.get());
  }
  // MasterOptions with a random high half for task ids (task_id_seed).
  static master::Options StateOptions(const MasterConfig& config);

  // What clients reported moving since the master started, by path and
  // direction (msg::TransferPath, msg::TransferDir).
  struct TransferTotal {
    uint64_t ops = 0;
    uint64_t bytes = 0;
  };
  using TransferTotals =
      std::array<std::array<TransferTotal, msg::kTransferDirs>, msg::kTransferPaths>;
  TransferTotals Transfers() const;

  master::TickReport Tick();
  master::MasterCounters Counters() const;
  msg::ClusterStatusReply Snapshot() const;
  // Replica descriptors of `key` for the admin API (grants no lease).
  Result<master::ObjectDump> QueryKey(const std::string& key) const;
  std::vector<std::string> AllKeys() const;

  // "Storage: X / Y (p%) | Keys: N (soft-pinned: M) | Clients: C | ..."
  std::string Summary() const;

  // At process exit, once nothing serves: the state is left to the kernel,
  // which takes the address space back at once, where its destructor frees
  // every object's node one by one (minutes at tens of millions, a cache
  // miss each). Every later call but the destructor is undefined.
  void LeaveStateToExit();

  // How many of the requests this thread handled since the last call
  // reveal nothing durable (PutStart, PutRevoke, Ping, their batches): a
  // round made only of those waits for its own journal changes (evictions),
  // not for everyone's. Resets the count.
  static uint64_t TakePrivateOps();

  // After the state was loaded (e.g. from the journal) through WithState:
  // learns each loaded segment's access key, so capabilities signed for the
  // stores that re-attach keep verifying.
  void AdoptLoadedSegments();

  // From now on, removed and replaced objects are retired on their stores
  // before the operation that removed them is answered (retirer.h). Null
  // (the default): nothing is retired. `retirer` must outlive this.
  void SetRetirer(class Retirer* retirer);
  // After the state was loaded and before anything is served: retires the
  // free space of every mounted segment on its store and waits for the
  // answers (at most the retirer's wait a pass); ranges a store did not
  // retire are quarantined, as after a failed RETIRE of a removal
  // (retirer.h), and so is the rest of that store's segment. The quarantine
  // is not journalled, so this is what keeps a restarted master (or a new
  // HA leader) from handing out a range whose RETIRE failed before.
  struct FreeSpaceRetired {
    size_t ranges = 0;                // free ranges found
    size_t quarantined = 0;           // ranges (and whole segments) quarantined
    size_t quarantined_segments = 0;  // segments whose store did not retire its space
  };
  FreeSpaceRetired RetireFreeSpace();

  // The retirer's counts and the state's quarantine (metrics; zeros
  // without a retirer).
  struct RetireReport {
    class Retirer* retirer = nullptr;
    uint64_t failed = 0, recovered = 0, late_replies = 0;
    master::MasterState::QuarantineStats quarantine;
  };
  RetireReport RetireStats() const;

  // The term every grant is signed with from now on (the HA leader's, set
  // before its RPC port opens; 0 without HA). See common/capability.h.
  void SetGrantTerm(uint64_t term) { grant_term_.store(term, std::memory_order_release); }
  uint64_t grant_term() const { return grant_term_.load(std::memory_order_acquire); }

  // For direct use (tests, durability): run `fn` with the state locked.
  template <typename Fn>
  auto WithState(Fn&& fn) {
    std::lock_guard<std::mutex> lock(mu_);
    return fn(*state_);
  }

 private:
  void Sign(msg::ReplicaDesc* replica, bool write, uint64_t now_wall_ms);
  // `wall_before_ms`: wall time read before the state machine's `now`.
  void SignAll(std::vector<msg::ReplicaDesc>* replicas, bool write, uint64_t wall_before_ms);
  Status RemoveLocked(const msg::RemoveRequest& req);
  // service_retire.cc. Under mu_: hands the state's stale ranges, signed, to
  // the retirer; returns the ticket to await (0 without a retirer) and sets
  // `seen` (if given) to the retirer's outcomes reported so far.
  uint64_t RetireLocked(uint64_t* seen = nullptr);
  // Under mu_: the same for `ranges` (the state's stale ranges, or free ones).
  uint64_t SubmitRetiresLocked(class Retirer* retirer,
                               const std::vector<master::StaleRange>& ranges, uint64_t* seen);
  // Without mu_: waits (bounded) until the ranges up to `ticket` were
  // retired. False when a retire failed since `seen` (Retirer::reported())
  // or the wait gave up: the caller must then ApplyRetireOutcomesLocked.
  bool AwaitRetired(uint64_t ticket, uint64_t seen);
  // Under mu_: the ranges whose retire failed go to the state's quarantine,
  // those retired by a retry leave it (master/master_state_quarantine.cc).
  // `failed_segments` (if given) gets the segments of the failed ranges.
  void ApplyRetireOutcomesLocked(std::set<std::string>* failed_segments = nullptr);
  // Under mu_: a reply that would hand a writer quarantined space (placed
  // there before the retire's failure was known) is revoked and refused
  // with NO_AVAILABLE_HANDLE instead.
  void RefuseQuarantined(const msg::ClientId& client, const std::string& key,
                         Result<msg::PutStartReply>* reply);
  void RefuseQuarantined(const msg::ClientId& client, const std::string& key,
                         msg::BatchItem<msg::PutStartReply>* item);
  // A copy or move's targets in quarantine: the task fails instead.
  void RefuseQuarantined(const msg::TaskRequest& req, Result<msg::TaskStartReply>* reply);
  // Runs `fn` under mu_, then waits for the retires of what it removed.
  // `unsafe(reply)` runs under mu_ only when a retire failed meanwhile: a
  // reply that hands out space fixes itself there (RefuseQuarantined).
  template <typename Fn, typename Check>
  auto Retiring(Fn&& fn, Check&& unsafe) {
    uint64_t ticket = 0, seen = 0;
    auto r = [&] {
      std::lock_guard<std::mutex> lock(mu_);
      auto out = fn();
      ticket = RetireLocked(&seen);
      return out;
    }();
    if (!AwaitRetired(ticket, seen)) {
      std::lock_guard<std::mutex> lock(mu_);
      ApplyRetireOutcomesLocked();
      unsafe(r);
    }
    return r;
  }
  template <typename Fn>
  auto Retiring(Fn&& fn) {
    return Retiring(std::forward<Fn>(fn), [](auto&) {});
  }

  // service_tier.cc: the hooks of the disk tier in the operations above
  // (no-ops without one). A read that missed memory, a read that hit it.
  Status TierReadMiss(const std::string& key, const Status& missed, uint64_t now_us);
  void TierReadHit(const std::string& key);
  bool TierHas(const std::string& key) const;
  // The key's disk replica goes (removed or replaced); true when it had one.
  bool TierForget(const std::string& key);
  void TierTick(uint64_t now_us);
  uint64_t TierForgetAll();
  void FlushTierChanges();  // to tier_journal_; wakes parking_ for new work
  void FlushTierRecords();  // to tier_journal_ only (also before each state record)
  // Before a put or a read that stages from disk needs `need_bytes` of
  // memory: offloads ahead, and true when the call is parked (rpc::ParkCall)
  // to wait for the offloads in flight instead of evicting now.
  bool TierHolds(uint64_t need_bytes, uint64_t now_us);
  // Bytes reading these keys would stage from disk into memory.
  uint64_t TierStageBytes(const msg::Batch<msg::KeyRequest>& reqs) const;
  // The state's listener: `listener` itself, or with a disk tier a tap in
  // front of it (tier_tap_) counting objects evicted with no disk copy.
  master::StateListener* TierTap(const MasterConfig& config, master::StateListener* listener);

  MasterConfig config_;
  const Clock& clock_;
  mutable std::mutex mu_;
  std::unique_ptr<master::StateListener> tier_tap_;  // before state_, which calls it
  std::unique_ptr<master::MasterState> state_;
  std::unique_ptr<class TierService> tier_;  // --enable-offload; under mu_
  DiskReplicaListener* tier_journal_ = nullptr;  // the journal or the HA log
  rpc::ParkingLot parking_;
  struct SegmentKey {
    std::string access_key;
    uint64_t incarnation = 0;
  };
  std::map<std::string, SegmentKey, std::less<>> segment_keys_;  // under mu_
  std::atomic<uint64_t> grant_term_{0};
  std::atomic<class Retirer*> retirer_{nullptr};  // set before serving
  mutable std::mutex transfers_mu_;  // guards transfers_ (never held with mu_)
  TransferTotals transfers_{};
};

}  // namespace mc::masterd

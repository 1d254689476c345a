// ClientImpl: the Client behind Client::Connect and Client::Make. Internal
// to the client library: client.cc has puts, transfers, tasks and the
// connection, client_get.cc gets, existence, sizes and removals.
#pragma once

#include "client/client.h"
#include "tls/tls_setup.h"

#include <algorithm>
#include <cassert>
#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>

#include "common/capability.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/host_identity.h"
#include "common/log.h"
#include "client/direct_reads.h"
#include "client/master_link.h"
#include "client/master_locator.h"
#include "client/replica_order.h"
#include "msg/tier_messages.h"
#include "rpc/client.h"
#include "transfer/access.h"
#include "transfer/fallback_transport.h"
#include "transfer/rdma/rdma_transport.h"
#include "transfer/shm_transport.h"
#include "transfer/tcp_transport.h"


namespace mc::client {

// One planned transfer of a buffer, with the storage its TransferOp points
// to. The endpoint has an shm path only when the buffer is read or written
// through the same-host path.
struct Planned {
  transfer::Endpoint endpoint;
  transfer::TransferOp op;
  std::string store;  // the buffer's endpoint, "host:port"
};

// How often a busy client tells the master what it moved (ReportTransfers),
// and so how far behind the master's per-path counters may run.
inline constexpr uint64_t kTransferReportIntervalUs = 1000000;

class ClientImpl final : public Client {
 public:
  ClientImpl(const Config& config, std::unique_ptr<MasterLink> master,
             std::unique_ptr<transfer::Transport> transport, const Clock& clock)
      : config_(config), master_(std::move(master)), transport_(std::move(transport)),
        clock_(clock), direct_(config.cluster.direct_read_ttl_us) {
    std::string id = RandomBytes(16);
    std::memcpy(&id_.hi, id.data(), 8);
    std::memcpy(&id_.lo, id.data() + 8, 8);
  }
  ~ClientImpl() override {
    ReportTransfers(/*force=*/true);
    ReportAccesses(/*force=*/true);
  }

  Status Put(const std::string& key, std::span<const uint8_t> value,
             const msg::PutOptions& options) override {
    std::vector<Status> st = BatchPut({key}, {value}, options);
    return st[0];
  }

  Result<std::vector<uint8_t>> Get(const std::string& key) override {
    auto r = BatchGet({key});
    return std::move(r[0]);
  }

  Result<uint64_t> GetInto(const std::string& key, std::span<uint8_t> buffer) override;

  Result<msg::GetReplicaListReply> Locate(const std::string& key) override {
    return master_->GetReplicaList(msg::KeyRequest{id_, key});
  }

  Result<bool> Exists(const std::string& key) override {
    auto r = master_->ExistKey(msg::KeyRequest{id_, key});
    if (r.ok() && !*r) direct_.Forget(key);  // the master says it is gone: stop reading it
    return r;
  }

  Status Remove(const std::string& key, bool force) override {
    direct_.Forget(key);
    return master_->Remove(msg::RemoveRequest{key, force});
  }

  Result<msg::ListKeysReply> List(const msg::ListKeysRequest& request) override {
    return master_->ListKeys(request);
  }
  Result<msg::TieredListKeysReply> ListTiered(const msg::ListKeysRequest& request) override {
    return master_->ListKeysTiered(request);
  }

  Result<msg::ClusterStatusReply> ClusterStatus() override {
    return master_->ClusterStatus();
  }

  std::vector<Status> BatchPut(const std::vector<std::string>& keys,
                               const std::vector<std::span<const uint8_t>>& values,
                               const msg::PutOptions& options) override;
  std::vector<Result<std::vector<uint8_t>>> BatchGet(const std::vector<std::string>& keys) override;
  std::vector<Result<uint64_t>> BatchGetInto(const std::vector<std::string>& keys,
                                             const std::vector<std::span<uint8_t>>& buffers) override;
  std::vector<Result<bool>> BatchExists(const std::vector<std::string>& keys) override;
  std::vector<Status> BatchPutParts(const std::vector<std::string>& keys,
                                    const std::vector<ConstParts>& parts,
                                    const msg::PutOptions& options) override;
  std::vector<Result<uint64_t>> BatchGetIntoParts(const std::vector<std::string>& keys,
                                                  const std::vector<Parts>& parts) override;
  Result<uint64_t> Size(const std::string& key) override;
  std::vector<Status> BatchRemove(const std::vector<std::string>& keys, bool force) override;
  Result<uint64_t> RemoveAll(bool force) override {
    direct_.Clear();
    MC_ASSIGN_OR_RETURN(msg::RemoveAllReply r, master_->RemoveAll(force));
    return r.removed;
  }
  msg::ClientId id() const override { return id_; }
  void ForgetLocations() override { direct_.Clear(); }
  std::optional<DirectReads::Entry> CachedLocation(const std::string& key) override {
    return direct_.Lookup(key, clock_.UnixMs());
  }
  std::vector<Status> RevokePuts(const msg::ClientId& owner,
                                 const std::vector<std::string>& keys) override {
    std::vector<msg::KeyRequest> reqs;
    for (const std::string& k : keys) reqs.push_back({owner, k});
    auto r = master_->BatchPutRevoke(reqs);
    return r.ok() ? *r : std::vector<Status>(keys.size(), r.status());
  }
  void CountHits(const std::vector<msg::KeyAccess>& hits) override {
    for (const msg::KeyAccess& a : hits) direct_.CountHit(a.key, a.count);
    ReportAccesses(/*force=*/false);
  }

  std::string last_transfer_path() const override {
    std::lock_guard<std::mutex> lock(path_mu_);
    return last_path_;
  }
  PathCounts path_counts() const override {
    std::lock_guard<std::mutex> lock(path_mu_);
    return counts_;
  }
  uint64_t staged_reads() const override { return staged_reads_.load(std::memory_order_relaxed); }
  Status RegisterBuffer(void* addr, uint64_t len) override {
    return transport_->RegisterBuffer(addr, len);
  }
  Status UnregisterBuffer(void* addr) override { return transport_->UnregisterBuffer(addr); }

  Result<msg::TaskId> CreateCopyTask(const std::string& key,
                                     const std::vector<std::string>& targets) override {
    return master_->CreateCopyTask({id_, key, targets});
  }
  Result<msg::TaskId> CreateMoveTask(const std::string& key, const std::string& source,
                                     const std::string& target) override {
    return master_->CreateMoveTask({id_, key, source, target});
  }
  Status RunTask(const msg::TaskId& task) override;
  Result<msg::TaskInfo> QueryTask(const msg::TaskId& task) override {
    return master_->QueryTask({id_, task});
  }
  Result<std::vector<std::string>> BatchReplicaClear(const std::vector<std::string>& keys,
                                                     const std::string& segment_name) override {
    MC_ASSIGN_OR_RETURN(msg::ReplicaClearReply r,
                        master_->BatchReplicaClear({id_, keys, segment_name}));
    return r.cleared;
  }
  Result<uint64_t> RemoveByRegex(const std::string& pattern, bool force) override {
    direct_.Clear();
    MC_ASSIGN_OR_RETURN(msg::RemoveByRegexReply r,
                        master_->RemoveByRegex({pattern, force}));
    return r.removed;
  }

 private:
  bool UseShm(const msg::BufferDesc& b) const {
    return config_.cluster.shm && !b.shm_path.empty() && b.hostname == HostIdentity();
  }

  // Plans one replica's buffers over the object held in `parts` (object
  // order; their total is the object's size): one op per piece of a
  // replica buffer that falls in one part.
  Status Plan(const msg::ReplicaDesc& replica, transfer::OpKind kind, const Parts& parts,
              uint64_t size, std::vector<Planned>* out) const;
  // Reads one object described by `reply` into `parts` (exactly its size),
  // trying replicas (same-host first) until one succeeds; replicas on stores
  // in `unreachable` are not tried, and stores that fail are added to it.
  Status ReadObject(const msg::GetReplicaListReply& reply, const Parts& parts,
                    UnreachableStores* unreachable);
  // PutStart of every request in one round trip, per-key outcomes.
  Result<std::vector<msg::BatchItem<msg::PutStartReply>>> StartPuts(
      const std::vector<msg::PutStartRequest>& reqs);
  // Orders replicas same-host first (stable: the master's order otherwise).
  void LocalFirst(msg::GetReplicaListReply& reply) const;
  // Runs planned ops over the transport (same-host ones carry an shm path;
  // the transport falls back as it does). Stores the transport found
  // unreachable are added to `unreachable` (when given).
  Status Run(std::vector<Planned>& planned, UnreachableStores* unreachable = nullptr);
  // Counts a successful batch's ops by the path that moved them.
  void CountPaths(const std::vector<transfer::TransferOp>& ops);
  // The replica lists of `reqs` in one master round trip (per-key status),
  // asking again while the master stages a key from a disk tier. With
  // `to_read` (a get, not a size query) such keys count in staged_reads().
  std::vector<msg::BatchItem<msg::GetReplicaListReply>> ReplicaLists(
      const std::vector<msg::KeyRequest>& reqs, bool to_read = true);
  std::vector<msg::BatchItem<msg::GetReplicaListReply>> AskReplicaLists(
      const std::vector<msg::KeyRequest>& reqs);
  // Where key i's bytes go, once its size is known; parts holding less than
  // the size are BUFFER_OVERFLOW for that key.
  using DestFn = std::function<Parts(size_t i, uint64_t size)>;
  // Gets of BatchGet and BatchGetInto: per-key status, object sizes. Keys
  // with a cached location are read directly (DirectReads), the rest, and
  // those whose direct read failed, through the master (FetchFromMaster).
  std::vector<Status> Fetch(const std::vector<std::string>& keys, const DestFn& dest,
                            std::vector<uint64_t>* sizes);
  // Fetch, each key's outcome its size or its error.
  std::vector<Result<uint64_t>> FetchSizes(const std::vector<std::string>& keys, const DestFn& dest);
  std::vector<Status> FetchFromMaster(const std::vector<std::string>& keys, const DestFn& dest,
                                      std::vector<uint64_t>* sizes);
  // Reads the keys DirectReads knows straight from their stores; true for
  // each key served (its size in `sizes`).
  std::vector<bool> FetchDirect(const std::vector<std::string>& keys, const DestFn& dest,
                                std::vector<uint64_t>* sizes);
  // Marks the just-planned read of `reply` (ops from `first` on) sealed when
  // DirectReads could remember it; after it succeeded, Learn remembers it.
  void SealIfCacheable(const msg::GetReplicaListReply& reply, std::vector<Planned>& planned,
                       size_t first) const;
  void Learn(const std::string& key, const msg::GetReplicaListReply& reply,
             const std::vector<Planned>& planned, size_t first, size_t end,
             uint64_t forgets_before);
  // Sends the master the direct reads' hits (ReportAccesses), as often as
  // ReportTransfers, or sooner when many keys wait.
  void ReportAccesses(bool force);
  // Tells the master the reads it granted (of `reqs`, those `lists` says
  // succeeded) are done; consumes `reqs`.
  void ReleaseLeases(std::vector<msg::KeyRequest>& reqs,
                     const std::vector<msg::BatchItem<msg::GetReplicaListReply>>& lists);

  // Sends the master what moved since the last report (ReportTransfers),
  // at most every kTransferReportIntervalUs unless `force` (at close).
  void ReportTransfers(bool force);

  Config config_;
  std::unique_ptr<MasterLink> master_;
  msg::ClientId id_;
  std::unique_ptr<transfer::Transport> transport_;
  const Clock& clock_;
  mutable std::mutex path_mu_;  // guards last_path_, counts_, unreported_, last_report_us_
  std::string last_path_ = "tcp";
  PathCounts counts_;
  // Moved since the last report, by msg::TransferPath and msg::TransferDir.
  struct Moved {
    uint64_t ops = 0, bytes = 0;
  };
  Moved unreported_[msg::kTransferPaths][msg::kTransferDirs] = {};
  uint64_t last_report_us_ = 0;
  DirectReads direct_;
  std::atomic<uint64_t> last_access_report_us_{0};
  std::atomic<uint64_t> staged_reads_{0};  // staged_reads()
};

}  // namespace mc::client

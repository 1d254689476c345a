// Client implementation: metadata through a MasterLink (rpc::MasterClient
// once connected), bytes through one transfer::Transport (once connected, a
// FallbackTransport of shm for same-host segments when enabled, RDMA with
// protocol rdma, then TCP).
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

namespace {

Result<transfer::Endpoint> ParseEndpoint(const msg::BufferDesc& b) {
  transfer::Endpoint ep;
  auto colon = b.endpoint.rfind(':');
  if (colon == std::string::npos) {
    return Error(ErrorCode::INVALID_REPLICA, "segment " + b.segment_name +
                                                 " has a bad endpoint '" + b.endpoint + "'");
  }
  ep.host = b.endpoint.substr(0, colon);
  int port = std::atoi(b.endpoint.c_str() + colon + 1);
  if (port <= 0 || port > 65535) {
    return Error(ErrorCode::INVALID_REPLICA, "segment " + b.segment_name +
                                                 " has a bad endpoint '" + b.endpoint + "'");
  }
  ep.port = static_cast<uint16_t>(port);
  ep.shm_path = b.shm_path;
  return ep;
}

// Cuts `parts` down to the first `size` bytes (dropping empty parts) and
// returns the bytes they hold, which is less than `size` if they are short.
uint64_t TrimParts(std::vector<std::span<uint8_t>>& parts, uint64_t size) {
  uint64_t room = 0;
  size_t kept = 0;
  for (auto& p : parts) {
    if (room == size) break;
    if (p.empty()) continue;
    p = p.first(std::min<uint64_t>(p.size(), size - room));
    room += p.size();
    parts[kept++] = p;
  }
  parts.resize(kept);
  return room;
}

// One planned transfer of a buffer, with the storage its TransferOp points
// to. The endpoint has an shm path only when the buffer is read or written
// through the same-host path.
struct Planned {
  transfer::Endpoint endpoint;
  transfer::TransferOp op;
  std::string store;  // the buffer's endpoint, "host:port"
};

// Longest a data-plane connect may take: a store that does not accept within
// this is not coming (a partition drops the SYN), whatever transfer_timeout
// allows for a transfer that is slow but moving.
constexpr uint64_t kMaxConnectTimeoutUs = 5000000;
// How often a busy client tells the master what it moved (ReportTransfers),
// and so how far behind the master's per-path counters may run.
constexpr uint64_t kTransferReportIntervalUs = 1000000;

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
  // The replica lists of `reqs` in one master round trip (per-key status).
  std::vector<msg::BatchItem<msg::GetReplicaListReply>> ReplicaLists(
      const std::vector<msg::KeyRequest>& reqs);
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
};

Status ClientImpl::Plan(const msg::ReplicaDesc& replica, transfer::OpKind kind,
                        const Parts& parts, uint64_t size, std::vector<Planned>* out) const {
  uint64_t off = 0;
  size_t part = 0;
  uint64_t in_part = 0;  // bytes of parts[part] already planned
  for (const msg::BufferDesc& b : replica.buffers) {
    if (b.size_bytes > size - off) {
      return Error(ErrorCode::INVALID_REPLICA, "replica buffers exceed the object size");
    }
    MC_ASSIGN_OR_RETURN(transfer::Endpoint ep, ParseEndpoint(b));
    if (!UseShm(b)) ep.shm_path.clear();
    // Every piece carries the whole buffer's grant: the store checks that
    // the grant covers the piece, so a split needs no new grant.
    for (uint64_t done = 0; done < b.size_bytes;) {
      while (part < parts.size() && in_part == parts[part].size()) {
        ++part;
        in_part = 0;
      }
      if (part == parts.size()) {
        return Error(ErrorCode::INVALID_REPLICA, "replica buffers exceed the object size");
      }
      const uint64_t len = std::min(b.size_bytes - done, parts[part].size() - in_part);
      Planned p;
      p.endpoint = ep;
      p.store = b.endpoint;
      p.op.kind = kind;
      p.op.remote_offset = b.offset + done;
      p.op.buffer = parts[part].data() + in_part;
      p.op.len = len;
      p.op.grant = {b.offset, b.size_bytes, b.capability_expiry_unix_ms, b.capability};
      p.op.grant.term = b.capability_term;
      out->push_back(std::move(p));
      done += len;
      in_part += len;
    }
    off += b.size_bytes;
  }
  if (off != size) return Error(ErrorCode::INVALID_REPLICA, "replica buffers do not cover the object");
  return Status::Ok();
}

Status ClientImpl::Run(std::vector<Planned>& planned, UnreachableStores* unreachable) {
  std::vector<transfer::TransferOp> ops;
  ops.reserve(planned.size());
  for (Planned& p : planned) {
    p.op.endpoint = &p.endpoint;
    ops.push_back(p.op);
  }
  const Status st = transport_->Batch(ops);
  for (size_t i = 0; i < ops.size(); ++i) planned[i].op.seal = ops[i].seal;  // sealed reads
  if (!st.ok()) {
    for (size_t i = 0; unreachable != nullptr && i < ops.size(); ++i) {
      if (ops[i].peer_unreachable) unreachable->try_emplace(planned[i].store, ops[i].status);
    }
    return Error(ErrorCode::TRANSFER_FAIL, st.message());
  }
  CountPaths(ops);
  ReportTransfers(/*force=*/false);
  return Status::Ok();
}

void ClientImpl::CountPaths(const std::vector<transfer::TransferOp>& ops) {
  PathCounts moved;
  std::lock_guard<std::mutex> lock(path_mu_);
  for (const transfer::TransferOp& op : ops) {
    msg::TransferPath path = msg::TransferPath::kTcp;
    if (op.moved_by == "shm") {
      path = msg::TransferPath::kShm;
      ++moved.same_host;
    } else if (op.moved_by == "rdma") {
      path = msg::TransferPath::kRdma;
      ++moved.rdma;
    } else {
      ++moved.tcp;
      // Its store serves no RDMA (NOT_SUPPORTED), so it went over TCP.
      if (op.passed_on_by == "rdma") ++moved.tcp_fallback;
    }
    const msg::TransferDir dir =
        op.kind == transfer::OpKind::kWrite ? msg::TransferDir::kPut : msg::TransferDir::kGet;
    Moved& m = unreported_[static_cast<size_t>(path)][static_cast<size_t>(dir)];
    ++m.ops;
    m.bytes += op.len;
  }
  counts_.same_host += moved.same_host;
  counts_.rdma += moved.rdma;
  counts_.tcp += moved.tcp;
  counts_.tcp_fallback += moved.tcp_fallback;
  if (moved.rdma > 0) last_path_ = moved.tcp == 0 ? "rdma" : "rdma+tcp";
  else if (moved.same_host > 0 && moved.tcp == 0) last_path_ = "same-host";
  else last_path_ = "tcp";
}

void ClientImpl::ReportTransfers(bool force) {
  msg::TransferReport report{id_, {}};
  {
    std::lock_guard<std::mutex> lock(path_mu_);
    const uint64_t now = clock_.NowUs();
    if (!force && now - last_report_us_ < kTransferReportIntervalUs) return;
    last_report_us_ = now;
    for (size_t path = 0; path < msg::kTransferPaths; ++path) {
      for (size_t dir = 0; dir < msg::kTransferDirs; ++dir) {
        Moved& m = unreported_[path][dir];
        if (m.ops == 0) continue;
        report.counts.push_back({static_cast<uint8_t>(path), static_cast<uint8_t>(dir), m.ops,
                                 m.bytes});
        m = {};
      }
    }
  }
  if (report.counts.empty()) return;
  // Counting is best effort: a master that is away, or predates the
  // notification, loses this report and nothing else.
  Status st = master_->ReportTransfers(report);
  if (!st.ok()) {
    MC_LOG(DEBUG) << "transfer report not sent: " << st.ToString();
  }
}

std::vector<Status> ClientImpl::BatchPut(const std::vector<std::string>& keys,
                                         const std::vector<std::span<const uint8_t>>& values,
                                         const msg::PutOptions& options) {
  std::vector<ConstParts> parts;
  parts.reserve(values.size());
  for (const auto& v : values) parts.push_back({v});
  return BatchPutParts(keys, parts, options);
}

std::vector<Status> ClientImpl::BatchPutParts(const std::vector<std::string>& keys,
                                              const std::vector<ConstParts>& parts,
                                              const msg::PutOptions& options) {
  assert(keys.size() == parts.size());
  std::vector<Status> out(keys.size());
  if (keys.empty()) return out;
  for (const std::string& k : keys) direct_.Forget(k);  // an upsert replaces what we cached
  std::vector<msg::PutStartRequest> reqs;
  std::vector<uint64_t> sizes(keys.size(), 0);
  for (size_t i = 0; i < keys.size(); ++i) {
    for (const auto& p : parts[i]) sizes[i] += p.size();
    reqs.push_back({id_, keys[i], sizes[i], options});
  }
  auto r = StartPuts(reqs);
  if (!r.ok()) return std::vector<Status>(keys.size(), r.status());
  std::vector<msg::BatchItem<msg::PutStartReply>> started = std::move(*r);
  // All replicas of all started objects move in one batch.
  std::vector<Planned> planned;
  std::vector<size_t> first_op(keys.size() + 1, 0);
  for (size_t i = 0; i < keys.size(); ++i) {
    first_op[i] = planned.size();
    if (!started[i].status.ok()) {
      out[i] = started[i].status;
      continue;
    }
    // The transports take one pointer type for both directions; a write
    // only reads from it.
    Parts writable;
    for (const auto& p : parts[i]) {
      writable.emplace_back(const_cast<uint8_t*>(p.data()), p.size());
    }
    for (const auto& replica : started[i].value.replicas) {
      Status st = Plan(replica, transfer::OpKind::kWrite, writable, sizes[i], &planned);
      if (!st.ok()) out[i] = st;
    }
  }
  Status moved = Run(planned);
  std::vector<msg::KeyRequest> end, revoke;
  std::vector<size_t> end_idx;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!started[i].status.ok()) continue;
    if (!out[i].ok() || !moved.ok()) {
      if (out[i].ok()) out[i] = moved;
      revoke.push_back({id_, keys[i]});
    } else {
      end.push_back({id_, keys[i]});
      end_idx.push_back(i);
    }
  }
  if (!revoke.empty()) (void)master_->BatchPutRevoke(revoke);
  if (!end.empty()) {
    if (end.size() == 1) {
      Status st = master_->PutEnd(end[0]);
      if (!st.ok()) out[end_idx[0]] = st;
    } else {
      auto r = master_->BatchPutEnd(end);
      for (size_t j = 0; j < end.size(); ++j) {
        out[end_idx[j]] = r.ok() ? (*r)[j] : r.status();
      }
    }
    // A PutEnd that failed (a new HA leader that never heard of the put, a
    // leader that died before answering) is revoked: the put is then either
    // complete (its PutEnd was in the log) or gone, never left in progress.
    std::vector<msg::KeyRequest> unended;
    for (size_t j = 0; j < end.size(); ++j) {
      if (!out[end_idx[j]].ok()) unended.push_back(end[j]);
    }
    if (!unended.empty()) (void)master_->BatchPutRevoke(unended);
  }
  // Again once the new versions are in: a get that learnt the old location
  // meanwhile must not keep it, nor one still under way (DirectReads::forgets).
  for (const std::string& k : keys) direct_.Forget(k);
  return out;
}

Result<std::vector<msg::BatchItem<msg::PutStartReply>>> ClientImpl::StartPuts(
    const std::vector<msg::PutStartRequest>& reqs) {
  if (reqs[0].options.upsert) {
    std::vector<msg::PutStartExRequest> ex;
    ex.reserve(reqs.size());
    for (const auto& q : reqs) ex.push_back({q});
    return master_->BatchUpsertStart(ex);
  }
  if (!reqs[0].options.placement.empty()) {
    // Placement wishes travel only in BatchPutStartEx. A master without it
    // (NOT_SUPPORTED) gets the plain puts: placed as it would anyway.
    std::vector<msg::PutStartExRequest> ex;
    ex.reserve(reqs.size());
    for (const auto& q : reqs) ex.push_back({q});
    auto r = master_->BatchPutStartEx(ex);
    if (r.ok() || r.code() != ErrorCode::NOT_SUPPORTED) return r;
  }
  if (reqs.size() > 1) return master_->BatchPutStart(reqs);
  std::vector<msg::BatchItem<msg::PutStartReply>> started(1);
  auto r = master_->PutStart(reqs[0]);
  if (r.ok()) started[0].value = std::move(*r);
  else started[0].status = r.status();
  return started;
}

void ClientImpl::LocalFirst(msg::GetReplicaListReply& reply) const {
  // Same-host replicas first; then the others in the master's order.
  std::stable_sort(reply.replicas.begin(), reply.replicas.end(),
                   [this](const msg::ReplicaDesc& a, const msg::ReplicaDesc& b) {
                     bool la = !a.buffers.empty() && UseShm(a.buffers[0]);
                     bool lb = !b.buffers.empty() && UseShm(b.buffers[0]);
                     return la && !lb;
                   });
}

Status ClientImpl::ReadObject(const msg::GetReplicaListReply& reply, const Parts& parts,
                              UnreachableStores* unreachable) {
  ReadPlan plan = ReadOrder(reply.replicas, [this](const msg::BufferDesc& b) { return UseShm(b); },
                            *unreachable);
  if (plan.order.empty() && !plan.skipped.ok()) {
    return Error(ErrorCode::TRANSFER_FAIL,
                 "every replica is on a store that did not answer: " + plan.skipped.message());
  }
  Status last = Error(ErrorCode::INVALID_REPLICA, "no complete replica");
  for (size_t i : plan.order) {
    std::vector<Planned> planned;
    last = Plan(reply.replicas[i], transfer::OpKind::kRead, parts, reply.size_bytes, &planned);
    if (last.ok()) last = Run(planned, unreachable);
    if (last.ok()) break;
  }
  return last;
}

Status ClientImpl::RunTask(const msg::TaskId& task) {
  MC_ASSIGN_OR_RETURN(msg::TaskStartReply start, master_->TaskStart({id_, task}));
  Status copied = Status::Ok();
  if (!start.targets.empty()) {
    // Staged through memory here: the source and the targets may be on
    // different stores, and a store moves bytes only to or from a client.
    std::vector<uint8_t> bytes(start.size_bytes);
    const Parts parts{std::span<uint8_t>(bytes)};
    UnreachableStores unreachable;
    const msg::GetReplicaListReply source{{start.source}, start.size_bytes, start.lease_ttl_us};
    copied = ReadObject(source, parts, &unreachable);
    std::vector<Planned> planned;
    for (const msg::ReplicaDesc& target : start.targets) {
      if (copied.ok()) copied = Plan(target, transfer::OpKind::kWrite, parts, start.size_bytes,
                                     &planned);
    }
    if (copied.ok()) copied = Run(planned);
  }
  // Done reading the source: its lease may end (a moved source is freed then).
  master_->ReleaseLeasesSoon({{id_, start.key}});
  Status ended =
      master_->TaskEnd({id_, task, copied.ok(), copied.ok() ? "" : copied.ToString()});
  return copied.ok() ? ended : copied;
}

Result<uint64_t> ClientImpl::GetInto(const std::string& key, std::span<uint8_t> buffer) {
  auto list = ReplicaLists({msg::KeyRequest{id_, key}});
  Result<msg::GetReplicaListReply> reply =
      list[0].status.ok() ? Result<msg::GetReplicaListReply>(std::move(list[0].value))
                          : Result<msg::GetReplicaListReply>(list[0].status);
  if (!reply.ok()) {
    if (reply.code() == ErrorCode::OBJECT_NOT_FOUND) return Error(reply.code(), "not found");
    return reply.status();
  }
  if (reply->size_bytes > buffer.size()) {
    return Error(ErrorCode::BUFFER_OVERFLOW, "object of " + std::to_string(reply->size_bytes) +
                                                 " bytes does not fit a buffer of " +
                                                 std::to_string(buffer.size()));
  }
  UnreachableStores unreachable;
  MC_RETURN_IF_ERROR(ReadObject(*reply, {buffer.first(reply->size_bytes)}, &unreachable));
  return reply->size_bytes;
}

namespace {
// The master is reading the object from a disk tier into memory: ask again
// shortly (msg::kStagingFromDisk), up to kMaxStagingPolls times.
constexpr uint32_t kMaxStagingPolls = 100;
constexpr uint64_t kStagingPollMaxMs = 50;
bool Staging(const Status& st) {
  return st.code() == ErrorCode::REPLICA_IS_NOT_READY &&
         st.message().starts_with(msg::kStagingFromDisk);
}
}  // namespace

std::vector<msg::BatchItem<msg::GetReplicaListReply>> ClientImpl::ReplicaLists(
    const std::vector<msg::KeyRequest>& reqs) {
  auto lists = AskReplicaLists(reqs);
  for (uint32_t poll = 0; poll < kMaxStagingPolls; ++poll) {
    bool waiting = false;
    for (size_t i = 0; i < reqs.size(); ++i) {
      if (!Staging(lists[i].status)) continue;
      if (!waiting) {  // once per round, before the first key asked again
        std::this_thread::sleep_for(
            std::chrono::milliseconds(std::min<uint64_t>(kStagingPollMaxMs, 2 + poll * 4)));
      }
      waiting = true;
      lists[i] = AskReplicaLists({reqs[i]})[0];
    }
    if (!waiting) break;
  }
  return lists;
}

std::vector<msg::BatchItem<msg::GetReplicaListReply>> ClientImpl::AskReplicaLists(
    const std::vector<msg::KeyRequest>& reqs) {
  std::vector<msg::BatchItem<msg::GetReplicaListReply>> lists(reqs.size());
  if (reqs.size() == 1) {
    auto r = master_->GetReplicaList(reqs[0]);
    if (r.ok()) lists[0].value = std::move(*r);
    else lists[0].status = r.status();
    return lists;
  }
  auto r = master_->BatchGetReplicaList(reqs);
  if (!r.ok()) {
    for (auto& l : lists) l.status = r.status();
    return lists;
  }
  return std::move(*r);
}

std::vector<Status> ClientImpl::FetchFromMaster(const std::vector<std::string>& keys,
                                                const DestFn& dest, std::vector<uint64_t>* sizes) {
  std::vector<Status> out(keys.size());
  sizes->assign(keys.size(), 0);
  std::vector<msg::KeyRequest> reqs;
  reqs.reserve(keys.size());
  for (const auto& k : keys) reqs.push_back({id_, k});
  const uint64_t forgets_before = direct_.forgets();
  auto lists = ReplicaLists(reqs);  // one master round trip for the whole batch
  std::vector<Parts> bufs(keys.size());
  std::vector<Planned> planned;
  // Each key's ops in `planned` (empty when it planned none).
  std::vector<std::pair<size_t, size_t>> op_range(keys.size(), {0, 0});
  bool planned_all = true;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!lists[i].status.ok()) {
      out[i] = lists[i].status;
      if (out[i].code() == ErrorCode::OBJECT_NOT_FOUND) out[i] = Error(out[i].code(), "not found");
      continue;
    }
    auto& reply = lists[i].value;
    LocalFirst(reply);
    (*sizes)[i] = reply.size_bytes;
    bufs[i] = dest(i, reply.size_bytes);
    const uint64_t room = TrimParts(bufs[i], reply.size_bytes);
    if (room < reply.size_bytes) {
      out[i] = Error(ErrorCode::BUFFER_OVERFLOW, "buffer of " + std::to_string(room) +
                                                     " bytes for an object of " +
                                                     std::to_string(reply.size_bytes));
      continue;
    }
    const size_t first = planned.size();
    if (reply.replicas.empty() ||
        !Plan(reply.replicas[0], transfer::OpKind::kRead, bufs[i], reply.size_bytes, &planned).ok()) {
      planned_all = false;
    } else {
      op_range[i] = {first, planned.size()};
      SealIfCacheable(reply, planned, first);
    }
  }
  // Fast path: the first replica of every key moves in one concurrent batch.
  // Otherwise (or if it fails), key by key through every replica in turn,
  // skipping the stores the fast path found unreachable: each would only
  // cost another transfer_timeout.
  UnreachableStores unreachable;
  if (!planned_all || !Run(planned, &unreachable).ok()) {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (out[i].ok() && lists[i].status.ok()) {
        out[i] = ReadObject(lists[i].value, bufs[i], &unreachable);
      }
    }
  } else {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (out[i].ok() && lists[i].status.ok()) {
        Learn(keys[i], lists[i].value, planned, op_range[i].first, op_range[i].second,
              forgets_before);
      }
    }
  }
  ReleaseLeases(reqs, lists);
  return out;
}

std::vector<Status> ClientImpl::Fetch(const std::vector<std::string>& keys, const DestFn& dest,
                                      std::vector<uint64_t>* sizes) {
  if (!direct_.enabled()) return FetchFromMaster(keys, dest, sizes);
  std::vector<bool> served = FetchDirect(keys, dest, sizes);
  std::vector<size_t> missed;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!served[i]) missed.push_back(i);
  }
  std::vector<Status> out(keys.size());
  if (!missed.empty()) {
    std::vector<std::string> rest;
    rest.reserve(missed.size());
    for (size_t i : missed) rest.push_back(keys[i]);
    std::vector<uint64_t> rest_sizes;
    std::vector<Status> st = FetchFromMaster(
        rest, [&](size_t j, uint64_t size) { return dest(missed[j], size); }, &rest_sizes);
    for (size_t j = 0; j < missed.size(); ++j) {
      out[missed[j]] = std::move(st[j]);
      (*sizes)[missed[j]] = rest_sizes[j];
    }
  }
  ReportAccesses(/*force=*/false);
  return out;
}

std::vector<bool> ClientImpl::FetchDirect(const std::vector<std::string>& keys,
                                          const DestFn& dest, std::vector<uint64_t>* sizes) {
  sizes->assign(keys.size(), 0);
  std::vector<bool> served(keys.size(), false);
  const uint64_t now_ms = clock_.UnixMs();
  std::vector<DirectReads::Entry> entries;
  std::vector<size_t> which;
  std::vector<transfer::TransferOp> ops;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto e = direct_.Lookup(keys[i], now_ms);
    if (!e) continue;
    Parts parts = dest(i, e->size_bytes);
    // One destination that holds it: else the master path says what is wrong.
    if (parts.size() != 1 || parts[0].size() < e->size_bytes) continue;
    which.push_back(i);
    entries.push_back(std::move(*e));
    transfer::TransferOp op;
    op.kind = transfer::OpKind::kRead;
    op.remote_offset = entries.back().offset;
    op.buffer = parts[0].data();
    op.len = entries.back().size_bytes;
    op.grant = entries.back().grant;
    op.sealed = true;
    op.seal = entries.back().seal;
    ops.push_back(std::move(op));
  }
  if (ops.empty()) return served;
  for (size_t k = 0; k < ops.size(); ++k) ops[k].endpoint = &entries[k].endpoint;
  (void)transport_->Batch(ops);  // per-op statuses below
  std::vector<transfer::TransferOp> moved;
  for (size_t k = 0; k < ops.size(); ++k) {
    const std::string& key = keys[which[k]];
    if (!ops[k].status.ok()) {
      // Stale (the space was written since), or the store is gone: ask the master.
      direct_.Forget(key);
      continue;
    }
    served[which[k]] = true;
    (*sizes)[which[k]] = entries[k].size_bytes;
    direct_.CountHit(key);
    moved.push_back(ops[k]);
  }
  if (!moved.empty()) {
    CountPaths(moved);
    ReportTransfers(/*force=*/false);
  }
  return served;
}

void ClientImpl::SealIfCacheable(const msg::GetReplicaListReply& reply,
                                 std::vector<Planned>& planned, size_t first) const {
  if (!direct_.enabled() || planned.size() != first + 1 ||
      reply.size_bytes > DirectReads::kMaxObjectBytes || reply.replicas[0].buffers.size() != 1 ||
      reply.replicas[0].buffers[0].sealed_capability.empty()) {
    return;
  }
  planned[first].op.sealed = true;
  planned[first].op.seal = 0;  // learn it
}

void ClientImpl::Learn(const std::string& key, const msg::GetReplicaListReply& reply,
                       const std::vector<Planned>& planned, size_t first, size_t end,
                       uint64_t forgets_before) {
  if (end != first + 1 || !planned[first].op.sealed) return;
  direct_.Learn(key, reply, reply.replicas[0].buffers[0], planned[first].endpoint,
                planned[first].op.seal, clock_.UnixMs(), forgets_before);
}

void ClientImpl::ReportAccesses(bool force) {
  const uint64_t now = clock_.NowUs();
  uint64_t last = last_access_report_us_.load();
  if (!force && !direct_.report_due() && now - last < kTransferReportIntervalUs) return;
  // One thread reports a round; the others go on.
  if (!last_access_report_us_.compare_exchange_strong(last, now) && !force) return;
  std::vector<msg::KeyAccess> hits = direct_.TakeAccesses();
  for (size_t at = 0; at < hits.size(); at += DirectReads::kMaxPendingAccessKeys) {
    msg::AccessReport report{id_, {}};
    const size_t end = std::min(hits.size(), at + DirectReads::kMaxPendingAccessKeys);
    report.accesses.assign(std::make_move_iterator(hits.begin() + at),
                           std::make_move_iterator(hits.begin() + end));
    Status st = master_->ReportAccesses(report);
    if (!st.ok() && st.code() != ErrorCode::NOT_SUPPORTED) {
      MC_LOG(DEBUG) << "direct-read hits not reported: " << st.ToString();
    }
  }
}

void ClientImpl::ReleaseLeases(
    std::vector<msg::KeyRequest>& reqs,
    const std::vector<msg::BatchItem<msg::GetReplicaListReply>>& lists) {
  // Done reading: the master may evict these now rather than at the end of
  // their leases. Sent without waiting, in front of the next request (or
  // within a millisecond; rpc/client.h); if it is lost the leases run out.
  size_t granted = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (!lists[i].status.ok()) continue;
    if (granted != i) reqs[granted] = std::move(reqs[i]);
    ++granted;
  }
  if (granted == 0) return;
  reqs.resize(granted);
  master_->ReleaseLeasesSoon(reqs);
}

std::vector<Result<std::vector<uint8_t>>> ClientImpl::BatchGet(const std::vector<std::string>& keys) {
  std::vector<std::vector<uint8_t>> data(keys.size());
  std::vector<uint64_t> sizes;
  auto st = Fetch(keys, [&](size_t i, uint64_t size) {
    data[i].resize(size);
    return Parts{std::span<uint8_t>(data[i])};
  }, &sizes);
  std::vector<Result<std::vector<uint8_t>>> out;
  out.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (st[i].ok()) out.emplace_back(std::move(data[i]));
    else out.emplace_back(st[i]);
  }
  return out;
}

std::vector<Result<uint64_t>> ClientImpl::BatchGetInto(const std::vector<std::string>& keys,
                                                       const std::vector<std::span<uint8_t>>& buffers) {
  std::vector<uint64_t> sizes;
  auto st = Fetch(keys, [&](size_t i, uint64_t) { return Parts{buffers[i]}; }, &sizes);
  std::vector<Result<uint64_t>> out;
  out.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (st[i].ok()) out.emplace_back(sizes[i]);
    else out.emplace_back(st[i]);
  }
  return out;
}

std::vector<Result<uint64_t>> ClientImpl::BatchGetIntoParts(const std::vector<std::string>& keys,
                                                            const std::vector<Parts>& parts) {
  std::vector<uint64_t> sizes;
  auto st = Fetch(keys, [&](size_t i, uint64_t) { return parts[i]; }, &sizes);
  std::vector<Result<uint64_t>> out;
  out.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (st[i].ok()) out.emplace_back(sizes[i]);
    else out.emplace_back(st[i]);
  }
  return out;
}

Result<uint64_t> ClientImpl::Size(const std::string& key) {
  std::vector<msg::KeyRequest> reqs{{id_, key}};
  auto lists = ReplicaLists(reqs);
  if (!lists[0].status.ok()) return lists[0].status;
  const uint64_t size = lists[0].value.size_bytes;
  ReleaseLeases(reqs, lists);  // nothing was read: give the lease back at once
  return size;
}

std::vector<Status> ClientImpl::BatchRemove(const std::vector<std::string>& keys, bool force) {
  if (keys.empty()) return {};
  if (keys.size() == 1) return {Remove(keys[0], force)};
  std::vector<msg::RemoveRequest> reqs;
  reqs.reserve(keys.size());
  for (const auto& k : keys) reqs.push_back({k, force});
  auto r = master_->BatchRemove(reqs);
  if (!r.ok()) return std::vector<Status>(keys.size(), r.status());
  return std::move(*r);
}

std::vector<Result<bool>> ClientImpl::BatchExists(const std::vector<std::string>& keys) {
  std::vector<msg::KeyRequest> reqs;
  for (const auto& k : keys) reqs.push_back({id_, k});
  std::vector<Result<bool>> out;
  auto r = master_->BatchExistKey(reqs);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!r.ok()) {
      out.emplace_back(r.status());
    } else if (!(*r)[i].status.ok()) {
      out.emplace_back((*r)[i].status);
    } else {
      if (!(*r)[i].value) direct_.Forget(keys[i]);  // gone at the master: stop reading it
      out.emplace_back((*r)[i].value);
    }
  }
  return out;
}

transfer::TcpTransportOptions TcpOptions(const Config& config,
                                               std::shared_ptr<net::TlsContext> tls) {
  transfer::TcpTransportOptions o;
  o.tls = std::move(tls);
  // 1..kMaxTcpStreams: the config refuses anything else at start-up.
  o.streams = static_cast<int>(config.client.tcp_streams);
  o.auth_token = config.cluster.auth_token;
  // A store that makes no progress for transfer_timeout fails the
  // transfer (SO_SNDTIMEO/SO_RCVTIMEO), and the transport gives up on it
  // for the rest of the batch; a get then tries the next replica.
  o.tuning.io_timeout_us = config.client.transfer_timeout_us;
  o.connect_timeout_us = std::min(config.client.transfer_timeout_us, kMaxConnectTimeoutUs);
  return o;
}

// Same-host copies must stay inside their grants (see shm_transport.h for
// what that does and does not protect).
transfer::ShmTransportOptions ShmOptions() {
  transfer::ShmTransportOptions o;
  o.check = transfer::GrantBoundsCheck([] { return SystemClock::Instance().UnixMs(); });
  return o;
}

// The data path: same-host ops over shm, then RDMA (protocol rdma), then
// TCP, each passing on what it cannot move.
std::unique_ptr<transfer::Transport> DataPath(const Config& config,
                                              std::shared_ptr<net::TlsContext> tls,
                                              std::unique_ptr<transfer::RdmaTransport> rdma) {
  std::vector<transfer::FallbackTransport::Layer> layers;
  layers.push_back({std::make_unique<transfer::ShmTransport>(ShmOptions()),
                    [](const transfer::TransferOp& op) { return !op.endpoint->shm_path.empty(); },
                    [](const Status& st) {
                      // Stale (a sealed read whose range was written since):
                      // the store would say the same.
                      if (st.code() == ErrorCode::REPLICA_IS_GONE) return false;
                      // The segment could not be mapped (another user, store
                      // restarted): TCP gives the same bytes under the
                      // store's own checks.
                      MC_LOG(DEBUG) << "shm transfer failed, using tcp: " << st.ToString();
                      return true;
                    }});
  if (rdma != nullptr) {
    // One-sided WRITE/READ; a store that serves no RDMA answers
    // NOT_SUPPORTED and its ops go over TCP.
    // Sealed reads too, checked against the store's epochs read one-sided
    // (transfer/rdma/rdma_sealed.h): stale is stale on every path.
    layers.push_back({std::move(rdma), nullptr,
                      [](const Status& st) { return st.code() == ErrorCode::NOT_SUPPORTED; }});
  }
  layers.push_back(
      {std::make_unique<transfer::TcpTransport>(TcpOptions(config, std::move(tls))), nullptr,
       nullptr});
  return std::make_unique<transfer::FallbackTransport>(std::move(layers));
}

}  // namespace

rpc::ClientOptions MasterClientOptions(const ClusterConfig& cluster,
                                       std::shared_ptr<net::TlsContext> tls) {
  rpc::ClientOptions o;
  o.tls = std::move(tls);
  o.master = cluster.master;
  o.locate = MasterLocator(cluster.master);
  o.auth_token = cluster.auth_token;
  o.rpc_timeout_us = cluster.rpc_timeout_us;
  o.retries = cluster.rpc_retries;
  return o;
}

Result<std::unique_ptr<Client>> Client::Connect(const Config& config) {
  MC_ASSIGN_OR_RETURN(std::shared_ptr<net::TlsContext> tls, ClientTls(config.tls));
  auto link = RpcMasterLink(
      std::make_unique<rpc::MasterClient>(MasterClientOptions(config.cluster, tls)));
  // One cheap call proves the master is reachable and accepts our token, so
  // errors surface here with a clear message rather than mid-operation.
  MC_RETURN_IF_ERROR(link->ClusterStatus().status());
  std::unique_ptr<transfer::RdmaTransport> rdma;
  if (config.cluster.protocol == "rdma") {
    transfer::RdmaTransportOptions o;
    o.devices = config.cluster.device_name;
    o.auth_token = config.cluster.auth_token;
    o.tls = tls;
    o.engine.timeout_us = config.client.transfer_timeout_us;
    auto made = transfer::RdmaTransport::Create(o);
    if (!made.ok()) {
      return Error(made.code(), "protocol rdma: " + made.status().message());
    }
    rdma = std::move(*made);
  }
  return Make(config, std::move(link), DataPath(config, std::move(tls), std::move(rdma)));
}

std::unique_ptr<Client> Client::Make(const Config& config, std::unique_ptr<MasterLink> master,
                                     std::unique_ptr<transfer::Transport> transport,
                                     const Clock* clock) {
  return std::make_unique<ClientImpl>(config, std::move(master), std::move(transport),
                                      clock != nullptr ? *clock : SystemClock::Instance());
}

}  // namespace mc::client

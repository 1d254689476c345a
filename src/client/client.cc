// Client implementation: metadata through a MasterLink (rpc::MasterClient
// once connected), bytes through one transfer::Transport (once connected, a
// FallbackTransport of shm for same-host segments when enabled, RDMA with
// protocol rdma, then TCP).
#include "client/client.h"

#include "client/client_impl.h"

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

// Longest a data-plane connect may take: a store that does not accept within
// this is not coming (a partition drops the SYN), whatever transfer_timeout
// allows for a transfer that is slow but moving.
constexpr uint64_t kMaxConnectTimeoutUs = 5000000;

}  // namespace

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

namespace {

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

#include "p2p/transfer_engine.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/log.h"
#include "dataserver/tcp_server.h"
#include "transfer/fallback_transport.h"
#include "transfer/rdma/rdma_responder.h"
#include "transfer/rdma/rdma_transport.h"
#include "transfer/tcp_transport.h"

namespace mc::p2p {

int LogFailure(std::string_view call, const Status& st) {
  MC_LOG(ERROR) << "TransferEngine." << call << ": " << st.message();
  return -1;
}

struct TransferEngine::Batch {
  uint64_t id = 0;
  std::string target;
  transfer::OpKind kind = transfer::OpKind::kWrite;
  std::vector<TransferRequest> requests;
  BatchState state = BatchState::kPending;  // guarded by the engine's mu_
  Status status;                            // likewise
};

Result<std::unique_ptr<TransferEngine>> TransferEngine::Start(EngineOptions options) {
  std::unique_ptr<TransferEngine> engine(new TransferEngine());
  if (Status st = engine->Init(std::move(options)); !st.ok()) return st;
  return engine;
}

Status TransferEngine::Init(EngineOptions options) {
  options_ = std::move(options);
  if (options_.protocol != "tcp" && options_.protocol != "rdma") {
    return Error(ErrorCode::NOT_SUPPORTED, "protocol '" + options_.protocol +
                                               "': this TransferEngine moves bytes over tcp or rdma");
  }
  if (options_.local_hostname.empty()) {
    return Error(ErrorCode::INVALID_PARAMS, "local_hostname is empty");
  }
  auto dir = MakePeerDirectory(options_.metadata_server, options_.auth_token);
  if (!dir.ok()) return dir.status();
  directory_ = std::move(dir.value());

  transfer::TcpDataServerOptions so;
  so.listen_host = options_.listen_host;
  if (auto self = ParseHostPort(options_.local_hostname); self.ok()) so.port = self->port;
  so.auth_token = options_.auth_token;
  so.tuning.io_timeout_us = options_.transfer_timeout_us;
  std::unique_ptr<transfer::Transport> rdma;
  if (options_.protocol == "rdma") {
    auto r = StartRdma(&so);
    if (!r.ok()) return r.status();
    rdma = std::move(r.value());
  }
  // Absolute addressing: a null base makes request offsets addresses here.
  auto server = transfer::TcpDataServer::Start(nullptr, UINT64_MAX, RegisteredOnly(registry_),
                                               std::move(so));
  if (!server.ok()) return server.status();
  server_ = std::move(server.value());

  transfer::TcpTransportOptions to;
  if (options_.streams > 0) to.streams = options_.streams;
  to.auth_token = options_.auth_token;
  to.connect_timeout_us = options_.transfer_timeout_us;
  to.tuning.io_timeout_us = options_.transfer_timeout_us;
  std::vector<transfer::FallbackTransport::Layer> layers;
  if (rdma) {
    // A peer that serves no RDMA answers NOT_SUPPORTED: TCP then.
    layers.push_back({std::move(rdma), nullptr,
                      [](const Status& st) { return st.code() == ErrorCode::NOT_SUPPORTED; }});
  } else if (options_.same_host) {
    // Every failure but a peer that did not answer passes on to TCP.
    auto local = std::make_unique<LocalPeerTransport>(
        LocalPeerOptions{options_.auth_token, options_.transfer_timeout_us});
    local_ = local.get();
    layers.push_back({std::move(local), nullptr,
                      [](const Status& st) { return st.code() != ErrorCode::TRANSFER_FAIL; }});
  }
  layers.push_back({std::make_unique<transfer::TcpTransport>(to), nullptr, nullptr});
  transport_ = std::make_unique<transfer::FallbackTransport>(std::move(layers));

  if (options_.same_host) {
    auto local = LocalPeerServer::Start(registry_, server_->port(), options_.auth_token,
                                        options_.transfer_timeout_us);
    if (local.ok()) {
      local_server_ = std::move(local.value());
    } else {  // peers on this host then come through the rpc port
      MC_LOG(WARN) << "transfer engine: no same-host path: " << local.status().message();
    }
  }
  segment_name_ = directory_->SegmentName(options_.local_hostname, server_->port());
  const PeerAddress self{HostPart(options_.local_hostname), server_->port()};
  if (Status st = directory_->Publish(segment_name_, self); !st.ok()) return st;
  published_ = true;
  for (size_t i = 0; i < kAsyncWorkers; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  MC_LOG(INFO) << "transfer engine '" << segment_name_ << "' serving registered memory on port "
               << server_->port();
  return Status::Ok();
}

TransferEngine::~TransferEngine() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
  if (published_) directory_->Unpublish(segment_name_);
  local_server_.reset();
  if (server_) server_->Stop();
  transport_.reset();  // deregisters RDMA buffers before they are unmapped
  responder_.reset();
  for (auto& [addr, m] : managed_) {
    ::munmap(reinterpret_cast<void*>(addr), m.len);
    ::close(m.fd);
  }
}

Result<std::unique_ptr<transfer::Transport>> TransferEngine::StartRdma(
    transfer::TcpDataServerOptions* so) {
  std::unique_ptr<transfer::Verbs> system;
  transfer::Verbs* verbs = options_.verbs;
  if (verbs == nullptr) {
    system = transfer::SystemVerbs();
    verbs = system.get();
  }
  auto devices = transfer::OpenDevices(*verbs, options_.device_name);
  if (!devices.ok()) return Error(devices.code(), "protocol rdma: " + devices.status().message());
  auto responder = transfer::RdmaResponder::Create(std::move(devices.value()),
                                                   options_.local_hostname, nullptr, 0);
  if (!responder.ok()) return responder.status();
  responder_ = std::move(responder.value());
  so->rdma = responder_.get();
  transfer::RdmaTransportOptions ro;
  ro.devices = options_.device_name;
  ro.auth_token = options_.auth_token;
  ro.connect_timeout_us = options_.transfer_timeout_us;
  ro.tuning.io_timeout_us = options_.transfer_timeout_us;
  ro.engine.timeout_us = options_.transfer_timeout_us;
  ro.engine.absolute_addresses = true;
  auto t = transfer::RdmaTransport::Create(ro, verbs);
  if (!t.ok()) return Error(t.code(), "protocol rdma: " + t.status().message());
  rdma_ = t.value().get();
  return std::unique_ptr<transfer::Transport>(std::move(t.value()));
}

Status TransferEngine::Register(uint64_t addr, uint64_t len, int memfd) {
  MC_RETURN_IF_ERROR(registry_->Add(addr, len, memfd));
  if (responder_ == nullptr) return Status::Ok();
  Status st = responder_->AddRegion(reinterpret_cast<uint8_t*>(addr), len);
  if (st.ok()) {
    st = rdma_->RegisterBuffer(reinterpret_cast<void*>(addr), len);
    if (!st.ok()) (void)responder_->RemoveRegion(addr);
  }
  if (!st.ok()) (void)registry_->Remove(addr);
  return st;
}

Status TransferEngine::UnregisterMemory(uint64_t addr) {
  MC_RETURN_IF_ERROR(registry_->Remove(addr));
  if (responder_ != nullptr) {
    (void)responder_->RemoveRegion(addr);
    (void)rdma_->UnregisterBuffer(reinterpret_cast<void*>(addr));
  }
  return Status::Ok();
}

Result<uint64_t> TransferEngine::AllocateManaged(uint64_t len) {
  if (len == 0) return Error(ErrorCode::INVALID_PARAMS, "a managed buffer of 0 bytes");
  int fd = ::memfd_create("mooncake-te-buffer", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(len)) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return Error(ErrorCode::INTERNAL_ERROR, "memfd of " + std::to_string(len) + " bytes: " + why);
  }
  void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    ::close(fd);
    return Error(ErrorCode::INTERNAL_ERROR, "mmap of a managed buffer: " +
                                                std::string(std::strerror(errno)));
  }
  const auto addr = reinterpret_cast<uint64_t>(p);
  if (Status st = Register(addr, len, fd); !st.ok()) {
    ::munmap(p, len);
    ::close(fd);
    return st;
  }
  std::lock_guard lock(stats_mu_);
  managed_[addr] = {len, fd};
  return addr;
}

Status TransferEngine::FreeManaged(uint64_t addr) {
  Managed m;
  {
    std::lock_guard lock(stats_mu_);
    auto it = managed_.find(addr);
    if (it == managed_.end()) {
      return Error(ErrorCode::INVALID_PARAMS, "no managed buffer at " + std::to_string(addr));
    }
    m = it->second;
    managed_.erase(it);
  }
  (void)UnregisterMemory(addr);  // unregistered already by the caller, or now
  ::munmap(reinterpret_cast<void*>(addr), m.len);
  ::close(m.fd);
  return Status::Ok();
}

std::map<std::string, PathCount> TransferEngine::path_stats() const {
  std::lock_guard lock(stats_mu_);
  return paths_;
}

uint16_t TransferEngine::rpc_port() const { return server_->port(); }

Result<transfer::Endpoint> TransferEngine::Endpoint(const std::string& target) {
  {
    std::lock_guard lock(mu_);
    auto it = endpoints_.find(target);
    if (it != endpoints_.end()) return it->second;
  }
  auto addr = directory_->Resolve(target);
  if (!addr.ok()) return addr.status();
  transfer::Endpoint ep;
  ep.host = addr->host;
  ep.port = addr->port;
  std::lock_guard lock(mu_);
  endpoints_[target] = ep;
  return ep;
}

Status TransferEngine::Transfer(const std::string& target, transfer::OpKind kind,
                                const std::vector<TransferRequest>& requests) {
  auto ep = Endpoint(target);
  if (!ep.ok()) return ep.status();
  bool unreachable = false;
  Status st = TransferTo(ep.value(), kind, requests, &unreachable);
  if (st.ok() || !unreachable) return st;
  // The peer may have restarted on another port and published it: look the
  // name up again, and try once more if it now points elsewhere.
  {
    std::lock_guard lock(mu_);
    endpoints_.erase(target);
  }
  directory_->Forget(target);
  auto again = Endpoint(target);
  if (!again.ok() || (again->host == ep->host && again->port == ep->port)) return st;
  return TransferTo(again.value(), kind, requests, &unreachable);
}

Status TransferEngine::TransferTo(const transfer::Endpoint& ep, transfer::OpKind kind,
                                  const std::vector<TransferRequest>& requests,
                                  bool* unreachable) {
  std::vector<transfer::TransferOp> ops;
  for (size_t first = 0; first < requests.size(); first += transfer::kMaxBatchOps) {
    const size_t n = std::min(transfer::kMaxBatchOps, requests.size() - first);
    ops.assign(n, {});
    for (size_t i = 0; i < n; ++i) {
      const TransferRequest& r = requests[first + i];
      ops[i].kind = kind;
      ops[i].endpoint = &ep;
      ops[i].remote_offset = r.peer_addr;
      ops[i].buffer = reinterpret_cast<void*>(r.buffer);
      ops[i].len = r.len;
    }
    const Status st = transport_->Batch(ops);
    CountPaths(ops);
    if (!st.ok()) {
      *unreachable = std::any_of(ops.begin(), ops.end(),
                                 [](const transfer::TransferOp& op) { return op.peer_unreachable; });
      return st;
    }
  }
  return Status::Ok();
}

void TransferEngine::CountPaths(const std::vector<transfer::TransferOp>& ops) {
  std::lock_guard lock(stats_mu_);
  for (const transfer::TransferOp& op : ops) {
    if (op.moved_by.empty()) continue;
    PathCount& c = paths_[std::string(op.moved_by)];
    ++c.requests;
    c.bytes += op.len;
  }
}

Result<uint64_t> TransferEngine::Submit(const std::string& target, transfer::OpKind kind,
                                        std::vector<TransferRequest> requests) {
  auto batch = std::make_shared<Batch>();
  batch->target = target;
  batch->kind = kind;
  batch->requests = std::move(requests);
  {
    std::lock_guard lock(mu_);
    if (batches_.size() >= kMaxAsyncBatches) {
      return Error(ErrorCode::TASK_PENDING_LIMIT_EXCEEDED,
                   std::to_string(kMaxAsyncBatches) +
                       " batches are pending or unpolled (kMaxAsyncBatches)");
    }
    batch->id = next_batch_id_++;
    batches_[batch->id] = batch;
    queue_.push_back(batch);
  }
  work_cv_.notify_one();
  return batch->id;
}

void TransferEngine::WorkerLoop() {
  for (;;) {
    std::shared_ptr<Batch> batch;
    {
      std::unique_lock lock(mu_);
      work_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      batch = std::move(queue_.front());
      queue_.pop_front();
    }
    Status st = Transfer(batch->target, batch->kind, batch->requests);
    if (!st.ok()) {
      MC_LOG(WARN) << "transfer batch " << batch->id << " failed: " << st.message();
    }
    {
      std::lock_guard lock(mu_);
      batch->state = st.ok() ? BatchState::kCompleted : BatchState::kFailed;
      batch->status = std::move(st);
    }
    done_cv_.notify_all();
  }
}

Result<BatchState> TransferEngine::Poll(uint64_t batch_id) {
  std::lock_guard lock(mu_);
  auto it = batches_.find(batch_id);
  if (it == batches_.end()) {
    return Error(ErrorCode::TASK_NOT_FOUND, "no batch " + std::to_string(batch_id));
  }
  const BatchState state = it->second->state;
  if (state != BatchState::kPending) batches_.erase(it);
  return state;
}

Status TransferEngine::Wait(const std::vector<uint64_t>& batch_ids) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::microseconds(options_.transfer_timeout_us);
  std::unique_lock lock(mu_);
  for (uint64_t id : batch_ids) {
    auto it = batches_.find(id);
    if (it == batches_.end()) {
      return Error(ErrorCode::TASK_NOT_FOUND, "no batch " + std::to_string(id));
    }
    std::shared_ptr<Batch> batch = it->second;
    if (!done_cv_.wait_until(lock, deadline,
                             [&] { return batch->state != BatchState::kPending; })) {
      return Error(ErrorCode::TRANSFER_FAIL,
                   "batch " + std::to_string(id) + " did not finish within the transfer timeout");
    }
    batches_.erase(id);
    if (batch->state == BatchState::kFailed) return batch->status;
  }
  return Status::Ok();
}

}  // namespace mc::p2p

// TransferEngine: peer-to-peer transfers between processes' registered
// memory, the engine behind the Python mooncake.engine.TransferEngine (the
// reference's API, which vLLM and SGLang use to move KV blocks from prefill
// to decode).
//
// Each engine serves its registered memory (memory_registry.h) on its own
// data port, the "rpc port": a TcpDataServer (dataserver/) in absolute
// addressing, so a peer names bytes by their address in this process and
// the port refuses anything outside a registered region. Transfers to a
// peer go over TcpTransport (transfer/), same wire format as the store's
// data path, unless the peer runs on this host: then its registered memory
// is copied directly (local_peer.h: mapped memfds of managed buffers,
// process_vm_* for the rest), falling back to TCP when that is not possible.
// With protocol "rdma" registered memory is registered on the NICs too and
// transfers are one-sided RDMA WRITE / READ (transfer/rdma) to the peer's
// memory, with the rkeys its data port describes after AUTH; a peer that
// serves no RDMA is reached over TCP.
// path_stats() counts which path moved each request. Peers are found by
// segment name through a PeerDirectory (P2PHANDSHAKE or the HTTP metadata
// server).
//
// A transfer to a peer that is gone fails: at once when its port refuses
// the connection, else within transfer_timeout_us (connect and every send
// or receive are bounded by it). A peer found unreachable is looked up
// again, and tried once more when its published address changed (a peer
// restarted on another port).
//
// Asynchronous batches run on kAsyncWorkers threads of their own, at most
// kMaxAsyncBatches queued or finished-but-unpolled at a time.
// Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "p2p/local_peer.h"
#include "p2p/memory_registry.h"
#include "p2p/peer_directory.h"
#include "transfer/transport.h"

namespace mc::transfer {
class TcpDataServer;
struct TcpDataServerOptions;
class RdmaResponder;
class RdmaTransport;
class Verbs;
}

namespace mc::p2p {

inline constexpr size_t kAsyncWorkers = 2;
inline constexpr size_t kMaxAsyncBatches = 4096;
inline constexpr uint64_t kDefaultTransferTimeoutUs = 30'000'000;  // the reference's 30 s

struct EngineOptions {
  std::string local_hostname;   // "host" or "host:port" (that port is then bound)
  std::string metadata_server;  // "P2PHANDSHAKE" or http(s)://host:port/path
  std::string protocol = "tcp";
  std::string listen_host = "0.0.0.0";
  uint64_t transfer_timeout_us = kDefaultTransferTimeoutUs;
  std::string auth_token;  // data port HMAC auth and metadata bearer token; empty = none
  int streams = 0;         // TCP connections one transfer stripes over; 0 = default
  bool same_host = true;   // copy directly to peers on this host (local_peer.h)
  // protocol "rdma": the NICs ("mlx5_0,mlx5_1"; empty: every one) and the
  // verbs behind them (null: libibverbs; tests pass verbs_fake.h's).
  std::string device_name;
  transfer::Verbs* verbs = nullptr;
};

// Requests and bytes one path moved ("shm", "tcp").
struct PathCount {
  uint64_t requests = 0;
  uint64_t bytes = 0;
};

// One piece of a batch: `len` bytes between local `buffer` and the peer's
// address `peer_addr`.
struct TransferRequest {
  uint64_t buffer = 0;
  uint64_t peer_addr = 0;
  uint64_t len = 0;
};

enum class BatchState { kPending, kCompleted, kFailed };

// Logs "TransferEngine.<call>: <message>" at ERROR and returns -1, the
// reference API's failure (its bindings report through our log).
int LogFailure(std::string_view call, const Status& st);

class TransferEngine {
 public:
  static Result<std::unique_ptr<TransferEngine>> Start(EngineOptions options);
  ~TransferEngine();
  TransferEngine(const TransferEngine&) = delete;
  TransferEngine& operator=(const TransferEngine&) = delete;

  uint16_t rpc_port() const;
  const std::string& segment_name() const { return segment_name_; }

  // With protocol rdma also registered on the NICs: peers WRITE and READ it
  // one-sided with the rkeys the data port describes (RDMA_DESCRIBE).
  Status RegisterMemory(uint64_t addr, uint64_t len) { return Register(addr, len, -1); }
  Status UnregisterMemory(uint64_t addr);
  // allocate_managed_buffer: `len` bytes of a memfd mapped shared and
  // registered, so peers on this host can map it; its address.
  Result<uint64_t> AllocateManaged(uint64_t len);
  // INVALID_PARAMS when `addr` is not a managed buffer.
  Status FreeManaged(uint64_t addr);
  // By path name, since the engine started.
  std::map<std::string, PathCount> path_stats() const;
  // How the same-host path copied (zeros when same_host is off).
  LocalPeerStats same_host_stats() const { return local_ ? local_->stats() : LocalPeerStats{}; }

  // Moves every request of the batch to or from segment `target`; OK or the
  // first failure.
  Status Transfer(const std::string& target, transfer::OpKind kind,
                  const std::vector<TransferRequest>& requests);
  // Queues the batch; its id (never 0) for Poll / Wait.
  Result<uint64_t> Submit(const std::string& target, transfer::OpKind kind,
                          std::vector<TransferRequest> requests);
  // The batch's state; a finished batch is forgotten once polled
  // (TASK_NOT_FOUND after that, or for an unknown id).
  Result<BatchState> Poll(uint64_t batch_id);
  // Waits until every batch finished or one failed, at most the transfer
  // timeout; forgets the batches it saw finish. OK when all completed.
  Status Wait(const std::vector<uint64_t>& batch_ids);

 private:
  struct Batch;
  TransferEngine() = default;
  Status Init(EngineOptions options);
  // protocol rdma: the responder that serves our registered memory to
  // peers' NICs (hooked into the data port by *so) and the transport.
  Result<std::unique_ptr<transfer::Transport>> StartRdma(transfer::TcpDataServerOptions* so);
  Status Register(uint64_t addr, uint64_t len, int memfd);
  void WorkerLoop();
  Result<transfer::Endpoint> Endpoint(const std::string& target);
  // One attempt at `ep`; `*unreachable` when the peer could not be reached.
  Status TransferTo(const transfer::Endpoint& ep, transfer::OpKind kind,
                    const std::vector<TransferRequest>& requests, bool* unreachable);
  void CountPaths(const std::vector<transfer::TransferOp>& ops);

  EngineOptions options_;
  std::shared_ptr<MemoryRegistry> registry_ = std::make_shared<MemoryRegistry>();
  std::unique_ptr<PeerDirectory> directory_;
  std::unique_ptr<transfer::TcpDataServer> server_;
  std::unique_ptr<LocalPeerServer> local_server_;
  std::unique_ptr<transfer::RdmaResponder> responder_;  // protocol rdma
  transfer::RdmaTransport* rdma_ = nullptr;             // a layer of transport_ (rdma)
  LocalPeerTransport* local_ = nullptr;  // a layer of transport_; null: same_host off
  std::unique_ptr<transfer::Transport> transport_;
  std::string segment_name_;
  bool published_ = false;

  struct Managed {
    uint64_t len = 0;
    int fd = -1;
  };
  mutable std::mutex stats_mu_;  // guards paths_, managed_
  std::map<std::string, PathCount> paths_;
  std::map<uint64_t, Managed> managed_;

  std::mutex mu_;  // guards what follows
  std::condition_variable work_cv_, done_cv_;
  std::map<std::string, transfer::Endpoint> endpoints_;
  std::map<uint64_t, std::shared_ptr<Batch>> batches_;
  std::deque<std::shared_ptr<Batch>> queue_;
  uint64_t next_batch_id_ = 1;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace mc::p2p

// RdmaEngine: one-sided RDMA WRITE (put) and READ (get) between this
// process's memory and peers' segments, over the verbs seam (verbs.h), so
// the same code runs on real NICs, on soft-RoCE and in unit tests.
//
// Memory: RegisterBuffer registers a buffer on every NIC, cut into regions no
// larger than max_mr_size (or max_mr_chunk_bytes). A transfer from or into
// memory nobody registered registers its range for the length of the batch
// (correct, but pinning costs: engines register their KV buffers once).
//
// Peers: the first transfer to an endpoint builds a Link through the
// ConnectorFactory (the store's data port, rdma_transport.cc): the peer's
// descriptor, then per local NIC `qps_per_peer` RC QPs paired with as many of
// the peer's, NIC i with the peer's NIC i mod its count. Links are cached;
// one whose QPs all broke, or whose handshake connection the peer closed
// (it restarted), is rebuilt on next use.
//
// A batch is cut into slices (<= slice_bytes, never across a memory region)
// spread round-robin over the link's QPs, NICs first (LaneScheduler), at most
// max_outstanding_wrs per QP. One poller thread per NIC reaps completions. A
// failed slice moves its QP to ERROR (the QP is torn down with the link) and
// is retried on another QP, up to kMaxSliceAttempts; when no QP is left the
// link is rebuilt once per batch. A batch still unfinished after timeout_us
// errors its QPs and fails. Ops to a peer that serves no RDMA get
// NOT_SUPPORTED, for the caller to use TCP. Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "transfer/rdma/rdma_desc.h"
#include "transfer/rdma/rdma_plan.h"
#include "transfer/rdma/verbs.h"
#include "transfer/transport.h"

namespace mc::transfer {

struct RdmaEngineOptions {
  uint64_t slice_bytes = 1ull << 20;  // <= kMaxSliceBytes
  uint32_t qps_per_peer = 2;          // per NIC pair, <= kMaxQpsPerPeer
  uint32_t max_outstanding_wrs = 16;  // per QP, <= kMaxSendWrPerQp
  uint64_t timeout_us = 10000000;     // a whole batch
  uint64_t max_mr_chunk_bytes = 0;    // 0: each NIC's max_mr_size
  uint8_t qp_timeout_exp = 14;        // RC ack timeout 4.096 us * 2^14 = 67 ms
  // 6 retries of 67 ms: a dead peer errors a WR in ~0.5 s. Not 7: soft-RoCE
  // (rxe) takes 7 as "retry forever", so a WR to a killed store never
  // failed and the get waited out the whole transfer timeout.
  uint8_t qp_retry_cnt = 6;
  const Clock* clock = nullptr;       // null: SystemClock
  // TransferOp::remote_offset is the peer's virtual address (the p2p
  // engine's peers, whose descriptor lists their registered regions), not an
  // offset into its segment. A range no buffer of the cached descriptor
  // covers re-describes the peer once per batch (it may have registered
  // more memory since) before failing INVALID_WRITE / INVALID_READ.
  bool absolute_addresses = false;
};

// The handshake with one peer, over a connection it keeps open while the
// link lives (the peer's QPs live as long as it).
class PeerConnector {
 public:
  virtual ~PeerConnector() = default;
  // NOT_SUPPORTED when the peer serves no RDMA.
  virtual Result<RdmaSegmentDesc> Describe() = 0;
  virtual Result<RdmaConnectReply> Connect(const RdmaConnectRequest& req) = 0;
  // False once the peer closed the connection (e.g. it restarted).
  virtual bool Alive() = 0;
};
using ConnectorFactory = std::function<Result<std::unique_ptr<PeerConnector>>(const Endpoint&)>;

struct RdmaEngineStats {
  uint64_t slices = 0;
  uint64_t retried_slices = 0;
  uint64_t failed_ops = 0;
  uint64_t qp_errors = 0;
  uint64_t links_built = 0;
  uint64_t timeouts = 0;
  uint64_t temp_registrations = 0;
  std::vector<uint64_t> bytes_per_device;  // by local NIC
};

// How long an endpoint that answered NOT_SUPPORTED is not asked again.
inline constexpr uint64_t kNoRdmaRecheckUs = 30000000;
// Registered buffers at once (RegisterBuffer), and regions of one batch's
// temporary registrations.
inline constexpr size_t kMaxRegisteredBuffers = 4096;

class RdmaEngine {
 public:
  static Result<std::unique_ptr<RdmaEngine>> Create(
      std::vector<std::unique_ptr<VerbsDevice>> devices, ConnectorFactory connect,
      RdmaEngineOptions options);
  ~RdmaEngine();
  RdmaEngine(const RdmaEngine&) = delete;
  RdmaEngine& operator=(const RdmaEngine&) = delete;

  Status RegisterBuffer(void* addr, uint64_t len);
  // Must not race a transfer using the buffer.
  Status UnregisterBuffer(void* addr);
  Status Batch(std::span<TransferOp> ops);
  // The descriptor of `ep`'s segment, from the link to it (built now when
  // there is none; NOT_SUPPORTED: no RDMA there). Valid while the link is
  // cached; a rebuilt link (a restarted peer) describes it anew.
  Result<std::shared_ptr<const RdmaSegmentDesc>> PeerDescriptor(const Endpoint& ep);
  RdmaEngineStats stats() const;
  std::vector<std::string> device_names() const;

 private:
  struct Region {  // one memory region, registered on every device
    uint64_t addr = 0;
    uint64_t len = 0;
    std::vector<MemoryRegion> mr;  // by device
  };
  struct Registration {
    uint64_t addr = 0;
    uint64_t len = 0;
    std::vector<Region> regions;
  };
  struct Link;
  struct Slice;
  struct BatchCtx;
  struct Inflight;

  RdmaEngine() = default;
  Result<Registration> Register(void* addr, uint64_t len);
  void Deregister(Registration& r);
  const Region* FindRegion(const std::map<uint64_t, Registration>& regs, uint64_t addr) const;
  // The cached link to `ep` or a new one. NOT_SUPPORTED: no RDMA there.
  Result<std::shared_ptr<Link>> GetLink(const Endpoint& ep, bool rebuild);
  Result<std::shared_ptr<Link>> BuildLink(const Endpoint& ep);
  Status PlanOp(BatchCtx& ctx, size_t op_index, const std::shared_ptr<Link>& link);
  // The peer's address of an op's remote_offset (absolute_addresses or not).
  uint64_t RemoteBase(const Link& link, uint64_t remote_off) const;
  static bool IsOutside(const Status& st);  // PlanOp's "range outside the peer"
  // Posts what the lanes have room for; mu_ held.
  void PostQueued(BatchCtx& ctx, const std::shared_ptr<BatchCtx>& self);
  void FailSlice(BatchCtx& ctx, Slice& s, const std::string& why);  // mu_ held
  void OnCompletion(size_t device, const Completion& c);             // mu_ held
  void PollLoop(size_t device);
  void ExpireBatch(BatchCtx& ctx);  // mu_ held
  // Rebuilds, once per batch, each link that has slices waiting and no
  // healthy QP left; mu_ held through `lock`, dropped while connecting.
  void RebuildStarvedLinks(BatchCtx& ctx, std::span<TransferOp> ops, std::set<std::string>& rebuilt,
                           std::unique_lock<std::mutex>& lock);

  std::vector<std::unique_ptr<VerbsDevice>> devices_;
  ConnectorFactory connect_;
  RdmaEngineOptions options_;
  const Clock* clock_ = nullptr;
  uint64_t chunk_bytes_ = 0;

  mutable std::mutex reg_mu_;  // guards regs_
  std::map<uint64_t, Registration> regs_;  // by start address

  std::mutex link_mu_;  // guards links_, no_rdma_ (never held with mu_)
  std::map<std::string, std::shared_ptr<Link>> links_;
  std::map<std::string, uint64_t> no_rdma_;  // endpoint -> when it said so (us)

  mutable std::mutex mu_;  // guards lanes, slices, stats_, inflight_, stopping_
  std::condition_variable work_cv_;   // pollers: something in flight, or stop
  std::condition_variable batch_cv_;  // batches: a completion arrived
  std::vector<uint64_t> inflight_;   // per device
  bool stopping_ = false;
  RdmaEngineStats stats_;
  std::vector<std::thread> pollers_;
};

// Opens the devices of `device_list` (verbs.h OpenDevices) and checks the
// options' bounds; the error names a missing or inactive device.
Status CheckRdmaEngineOptions(const RdmaEngineOptions& o);

}  // namespace mc::transfer

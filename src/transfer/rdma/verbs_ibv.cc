// SystemVerbs: the verbs seam over libibverbs (see verbs.h). In the static
// binary the providers are linked in (RDMA_STATIC_PROVIDERS, meson.build).
#include <infiniband/verbs.h>
#include <poll.h>
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "common/log.h"
#include "transfer/rdma/verbs.h"

namespace mc::transfer {

namespace {

constexpr int kCqEntries = 4096;  // >= kMaxSendWrPerQp x the QPs a CQ serves at once

std::string Errno(int err) { return std::strerror(err); }

// The GID to use: RoCE v2 with an IPv4-mapped address first (what rxe and
// RoCE NICs on IPv4 networks carry), else index 0 (InfiniBand).
int PickGidIndex(ibv_context* ctx, const ibv_port_attr& pa, Gid* out) {
  int fallback = -1;
  for (int i = 0; i < pa.gid_tbl_len && i < 256; ++i) {
    ibv_gid gid;
    if (ibv_query_gid(ctx, 1, i, &gid) != 0) continue;
    bool zero = true;
    for (uint8_t b : gid.raw) zero = zero && b == 0;
    if (zero) continue;
    const bool v4 = gid.raw[10] == 0xff && gid.raw[11] == 0xff &&
                    std::all_of(gid.raw, gid.raw + 10, [](uint8_t b) { return b == 0; });
    if (v4 || pa.link_layer == IBV_LINK_LAYER_INFINIBAND) {
      std::memcpy(out->data(), gid.raw, 16);
      return i;
    }
    if (fallback < 0) {
      fallback = i;
      std::memcpy(out->data(), gid.raw, 16);
    }
  }
  return fallback;
}

class IbvDevice final : public VerbsDevice {
 public:
  ~IbvDevice() override {
    if (cq_ != nullptr) ibv_destroy_cq(cq_);
    if (channel_ != nullptr) ibv_destroy_comp_channel(channel_);
    if (pd_ != nullptr) ibv_dealloc_pd(pd_);
    if (ctx_ != nullptr) ibv_close_device(ctx_);
  }

  static Result<std::unique_ptr<VerbsDevice>> Open(ibv_device* dev, const std::string& name) {
    std::unique_ptr<IbvDevice> d(new IbvDevice());
    d->name_ = name;
    d->ctx_ = ibv_open_device(dev);
    if (d->ctx_ == nullptr) {
      return Error(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                   "RDMA device " + name + ": cannot open: " + Errno(errno));
    }
    ibv_port_attr pa{};
    if (ibv_query_port(d->ctx_, 1, &pa) != 0) {
      return Error(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                   "RDMA device " + name + ": cannot query port 1: " + Errno(errno));
    }
    if (pa.state != IBV_PORT_ACTIVE) {
      return Error(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                   "RDMA device " + name + " port 1 is " + ibv_port_state_str(pa.state) +
                       ", not ACTIVE (is its network interface up?)");
    }
    ibv_device_attr da{};
    if (ibv_query_device(d->ctx_, &da) != 0) {
      return Error(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                   "RDMA device " + name + ": cannot query: " + Errno(errno));
    }
    int gi = PickGidIndex(d->ctx_, pa, &d->port_.gid);
    if (gi < 0) {
      return Error(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                   "RDMA device " + name + " port 1 has no usable GID (no IP address?)");
    }
    d->port_.gid_index = static_cast<uint8_t>(gi);
    d->port_.lid = pa.lid;
    d->port_.max_mr_size = da.max_mr_size;
    d->port_.active_mtu = pa.active_mtu;
    // RDMA READs in flight per QP are capped by the responder's
    // max_dest_rd_atomic and the requester's max_rd_atomic; beyond them
    // further READs wait in the send queue, however deep it is.
    d->max_rd_atom_ = static_cast<uint8_t>(std::clamp(da.max_qp_rd_atom, 1, 255));
    d->max_init_rd_atom_ = static_cast<uint8_t>(std::clamp(da.max_qp_init_rd_atom, 1, 255));
    d->pd_ = ibv_alloc_pd(d->ctx_);
    d->channel_ = d->pd_ ? ibv_create_comp_channel(d->ctx_) : nullptr;
    d->cq_ = d->channel_ ? ibv_create_cq(d->ctx_, std::min(kCqEntries, da.max_cqe), nullptr,
                                         d->channel_, 0)
                         : nullptr;
    if (d->cq_ == nullptr) {
      return Error(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                   "RDMA device " + name + ": cannot create PD/CQ: " + Errno(errno));
    }
    int fl = fcntl(d->channel_->fd, F_GETFL);
    fcntl(d->channel_->fd, F_SETFL, fl | O_NONBLOCK);
    return std::unique_ptr<VerbsDevice>(std::move(d));
  }

  const std::string& name() const override { return name_; }
  const PortInfo& port() const override { return port_; }

  Result<MemoryRegion> RegisterMemory(void* addr, uint64_t length) override {
    ibv_mr* mr = ibv_reg_mr(pd_, addr, length,
                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                IBV_ACCESS_REMOTE_READ);
    if (mr == nullptr) {
      return Error(ErrorCode::INTERNAL_ERROR, "RDMA device " + name_ + ": registering " +
                                                  std::to_string(length) +
                                                  " bytes failed: " + Errno(errno) +
                                                  " (RLIMIT_MEMLOCK?)");
    }
    return MemoryRegion{addr, length, mr->lkey, mr->rkey, mr};
  }

  void DeregisterMemory(const MemoryRegion& mr) override {
    if (mr.handle != nullptr) ibv_dereg_mr(static_cast<ibv_mr*>(mr.handle));
  }

  Result<QueuePair> CreateQp(uint32_t max_send_wr) override {
    ibv_qp_init_attr ia{};
    ia.send_cq = cq_;
    ia.recv_cq = cq_;
    ia.qp_type = IBV_QPT_RC;
    ia.sq_sig_all = 1;
    ia.cap.max_send_wr = max_send_wr;
    ia.cap.max_recv_wr = 1;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    ibv_qp* qp = ibv_create_qp(pd_, &ia);
    if (qp == nullptr) {
      return Error(ErrorCode::INTERNAL_ERROR,
                   "RDMA device " + name_ + ": cannot create a QP: " + Errno(errno));
    }
    return QueuePair{qp->qp_num, qp};
  }

  Status ConnectQp(const QueuePair& q, const QpPeer& peer, uint32_t local_psn,
                   uint8_t timeout_exp, uint8_t retry_cnt) override {
    ibv_qp* qp = static_cast<ibv_qp*>(q.handle);
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    if (int e = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                          IBV_QP_ACCESS_FLAGS)) {
      return Fail("INIT", e);
    }
    a = {};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = static_cast<ibv_mtu>(std::min(peer.mtu ? peer.mtu : port_.active_mtu,
                                               port_.active_mtu));
    a.dest_qp_num = peer.qpn;
    a.rq_psn = peer.psn;
    a.max_dest_rd_atomic = max_rd_atom_;
    a.min_rnr_timer = 12;
    a.ah_attr.port_num = 1;
    a.ah_attr.dlid = peer.lid;
    bool zero_gid = std::all_of(peer.gid.begin(), peer.gid.end(), [](uint8_t b) { return b == 0; });
    if (!zero_gid) {
      a.ah_attr.is_global = 1;
      std::memcpy(a.ah_attr.grh.dgid.raw, peer.gid.data(), 16);
      a.ah_attr.grh.sgid_index = port_.gid_index;
      a.ah_attr.grh.hop_limit = 64;
    }
    if (int e = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                                          IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
      return Fail("RTR", e);
    }
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = timeout_exp;
    a.retry_cnt = retry_cnt;
    a.rnr_retry = 7;
    a.sq_psn = local_psn;
    a.max_rd_atomic = max_init_rd_atom_;
    if (int e = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                          IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                          IBV_QP_MAX_QP_RD_ATOMIC)) {
      return Fail("RTS", e);
    }
    return Status::Ok();
  }

  void ErrorQp(const QueuePair& q) override {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_ERR;
    (void)ibv_modify_qp(static_cast<ibv_qp*>(q.handle), &a, IBV_QP_STATE);
  }

  void DestroyQp(const QueuePair& q) override {
    if (q.handle != nullptr) ibv_destroy_qp(static_cast<ibv_qp*>(q.handle));
  }

  Status Post(const QueuePair& q, std::span<const WorkRequest> wrs) override {
    constexpr size_t kChain = 32;
    ibv_send_wr wr[kChain];
    ibv_sge sge[kChain];
    for (size_t base = 0; base < wrs.size(); base += kChain) {
      const size_t n = std::min(kChain, wrs.size() - base);
      for (size_t i = 0; i < n; ++i) {
        const WorkRequest& w = wrs[base + i];
        sge[i] = {w.local_addr, w.length, w.lkey};
        wr[i] = {};
        wr[i].wr_id = w.wr_id;
        wr[i].sg_list = &sge[i];
        wr[i].num_sge = 1;
        wr[i].opcode = w.kind == WrKind::kWrite ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
        wr[i].send_flags = IBV_SEND_SIGNALED;
        wr[i].wr.rdma.remote_addr = w.remote_addr;
        wr[i].wr.rdma.rkey = w.rkey;
        wr[i].next = i + 1 < n ? &wr[i + 1] : nullptr;
      }
      ibv_send_wr* bad = nullptr;
      if (int e = ibv_post_send(static_cast<ibv_qp*>(q.handle), wr, &bad)) {
        return Error(ErrorCode::TRANSFER_FAIL, "RDMA device " + name_ + " QP " +
                                                   std::to_string(q.qpn) +
                                                   ": post_send failed: " + Errno(e));
      }
    }
    return Status::Ok();
  }

  Result<size_t> Poll(std::span<Completion> out) override {
    constexpr int kBatch = 32;
    ibv_wc wc[kBatch];
    size_t n = 0;
    // Completions WaitForCompletion reaped while arming the CQ come first.
    for (; n < out.size() && stash_used_ < stash_len_; ++n) Convert(stash_[stash_used_++], &out[n]);
    if (n == out.size()) return n;
    int want = static_cast<int>(std::min<size_t>(out.size() - n, kBatch));
    int got = ibv_poll_cq(cq_, want, wc);
    if (got < 0) {
      if (n > 0) return n;
      return Error(ErrorCode::INTERNAL_ERROR, "RDMA device " + name_ + ": poll_cq failed");
    }
    for (int i = 0; i < got; ++i) Convert(wc[i], &out[n++]);
    return n;
  }

  // Called by the device's one poller thread, like Poll.
  void WaitForCompletion(int timeout_ms) override {
    if (stash_used_ < stash_len_) return;
    if (ibv_req_notify_cq(cq_, 0) != 0) return;
    // A completion that arrived before the CQ was armed raises no event:
    // reap it now (Poll hands it out next) rather than sleep past it.
    int got = ibv_poll_cq(cq_, kStash, stash_);
    if (got != 0) {
      stash_used_ = 0;
      stash_len_ = got > 0 ? got : 0;
      return;
    }
    pollfd pfd{channel_->fd, POLLIN, 0};
    if (poll(&pfd, 1, timeout_ms) <= 0) return;
    ibv_cq* cq = nullptr;
    void* ctx = nullptr;
    if (ibv_get_cq_event(channel_, &cq, &ctx) == 0) ibv_ack_cq_events(cq, 1);
  }

 private:
  static constexpr int kStash = 32;
  IbvDevice() = default;
  static void Convert(const ibv_wc& wc, Completion* out) {
    out->wr_id = wc.wr_id;
    out->qpn = wc.qp_num;
    out->ok = wc.status == IBV_WC_SUCCESS;
    out->error = out->ok ? std::string() : ibv_wc_status_str(wc.status);
  }
  Status Fail(const char* state, int err) const {
    return Error(ErrorCode::TRANSFER_FAIL,
                 "RDMA device " + name_ + ": QP to " + state + " failed: " + Errno(err));
  }

  std::string name_;
  PortInfo port_;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  uint8_t max_rd_atom_ = 1;       // device's max_qp_rd_atom (responder side)
  uint8_t max_init_rd_atom_ = 1;  // device's max_qp_init_rd_atom (requester side)
  // Completions reaped while arming the CQ, handed out by the next Poll.
  // Only the device's poller thread touches them (rdma_engine.h).
  ibv_wc stash_[kStash];
  int stash_len_ = 0;
  int stash_used_ = 0;
};

class IbvVerbs final : public Verbs {
 public:
  Result<std::vector<std::string>> ListDevices() override {
    int num = 0;
    errno = 0;
    ibv_device** list = ibv_get_device_list(&num);
    if (list == nullptr) {
      if (errno == ENOSYS) return std::vector<std::string>{};
      return Error(ErrorCode::INTERNAL_ERROR, "ibv_get_device_list failed: " + Errno(errno));
    }
    std::vector<std::string> names;
    for (int i = 0; i < num; ++i) names.emplace_back(ibv_get_device_name(list[i]));
    ibv_free_device_list(list);
    return names;
  }

  Result<std::unique_ptr<VerbsDevice>> Open(const std::string& name) override {
    int num = 0;
    ibv_device** list = ibv_get_device_list(&num);
    std::string present;
    for (int i = 0; list != nullptr && i < num; ++i) {
      if (name == ibv_get_device_name(list[i])) {
        auto r = IbvDevice::Open(list[i], name);
        ibv_free_device_list(list);
        return r;
      }
      present += (present.empty() ? "" : ",") + std::string(ibv_get_device_name(list[i]));
    }
    if (list != nullptr) ibv_free_device_list(list);
    return Error(ErrorCode::INVALID_PARAMS,
                 "RDMA device " + name + " not found (present: " +
                     (present.empty() ? "none" : present) + ")");
  }
};

}  // namespace

std::unique_ptr<Verbs> SystemVerbs() { return std::make_unique<IbvVerbs>(); }

}  // namespace mc::transfer

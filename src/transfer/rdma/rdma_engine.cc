#include "transfer/rdma/rdma_engine.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <list>
#include <random>

#include "common/log.h"

namespace mc::transfer {

namespace {

constexpr int kPollWaitMs = 10;          // a poller's sleep on an idle CQ
constexpr uint64_t kWakeUs = 50000;      // a batch re-checks its deadline this often
constexpr uint64_t kFlushWaitUs = 2000000;  // after a timeout, for flushed WRs to return

std::string PeerKey(const Endpoint& ep) { return ep.host + ":" + std::to_string(ep.port); }

uint32_t RandomPsn() {
  static thread_local std::mt19937 rng(std::random_device{}());
  return rng() & 0xffffff;
}

// Whether buffers of `desc` hold all of [addr, addr + len).
bool Covered(const RdmaSegmentDesc& desc, uint64_t addr, uint64_t len) {
  while (len > 0) {
    auto span = FindRemote(desc, addr, len);
    if (!span.ok()) return false;
    addr += span->len;
    len -= span->len;
  }
  return true;
}

}  // namespace

struct RdmaEngine::Link {
  std::string key;
  RdmaSegmentDesc desc;
  uint64_t seg_len = 0;
  std::unique_ptr<PeerConnector> conn;
  LaneScheduler sched;
  std::vector<QueuePair> qp;         // by lane
  std::vector<size_t> lane_dev;      // local device of each lane
  std::vector<size_t> lane_rdev;     // the peer's device of each lane
  std::vector<VerbsDevice*> devp;    // by lane, to destroy the QPs
  std::atomic<bool> dead{false};     // every lane broken: rebuild on next use

  Link(size_t nics, size_t qps, uint32_t max_out) : sched(nics, qps, max_out) {}
  ~Link() {
    for (size_t i = 0; i < qp.size(); ++i) devp[i]->DestroyQp(qp[i]);
  }
};

struct RdmaEngine::Slice {
  size_t op = 0;
  uint64_t off = 0;
  uint64_t len = 0;
  const Region* local = nullptr;
  uint32_t attempts = 0;
  int last_lane = -1;
  bool done = false;
};

struct RdmaEngine::BatchCtx {
  struct OpInfo {
    OpKind kind = OpKind::kWrite;
    uint8_t* buf = nullptr;
    uint64_t remote_off = 0;
    uint64_t len = 0;
  };
  RdmaEngine* engine = nullptr;
  std::vector<OpInfo> info;
  std::vector<std::shared_ptr<Link>> op_link;
  std::vector<std::string> op_error;
  std::vector<Slice> slices;
  std::deque<size_t> queue;
  size_t remaining = 0;
  bool expired = false;
  std::list<Registration> temp;  // this batch's own registrations

  ~BatchCtx() {
    for (auto& r : temp) engine->Deregister(r);
  }
};

struct RdmaEngine::Inflight {
  std::shared_ptr<BatchCtx> ctx;
  size_t slice = 0;
  std::shared_ptr<Link> link;
  int lane = 0;
};

Status CheckRdmaEngineOptions(const RdmaEngineOptions& o) {
  auto bad = [](const std::string& m) { return Error(ErrorCode::INVALID_PARAMS, m); };
  if (o.slice_bytes == 0 || o.slice_bytes > kMaxSliceBytes) {
    return bad("RDMA slice size must be 1.." + std::to_string(kMaxSliceBytes) + " bytes");
  }
  if (o.qps_per_peer == 0 || o.qps_per_peer > kMaxQpsPerPeer) {
    return bad("RDMA QPs per peer must be 1.." + std::to_string(kMaxQpsPerPeer));
  }
  if (o.max_outstanding_wrs == 0 || o.max_outstanding_wrs > kMaxSendWrPerQp) {
    return bad("RDMA outstanding WRs per QP must be 1.." + std::to_string(kMaxSendWrPerQp));
  }
  if (o.timeout_us == 0) return bad("RDMA transfer timeout must be > 0");
  return Status::Ok();
}

Result<std::vector<std::unique_ptr<VerbsDevice>>> OpenDevices(Verbs& verbs,
                                                              const std::string& device_list) {
  std::vector<std::string> names;
  for (size_t pos = 0; pos <= device_list.size();) {
    size_t comma = device_list.find(',', pos);
    if (comma == std::string::npos) comma = device_list.size();
    std::string n = device_list.substr(pos, comma - pos);
    n.erase(0, n.find_first_not_of(" \t"));
    n.erase(n.find_last_not_of(" \t") + 1);
    if (!n.empty()) names.push_back(n);
    pos = comma + 1;
  }
  if (names.empty()) {
    MC_ASSIGN_OR_RETURN(names, verbs.ListDevices());
    if (names.empty()) {
      return Error(ErrorCode::NOT_SUPPORTED, "no RDMA device on this host");
    }
  }
  if (names.size() > kMaxRdmaDevices) {
    return Error(ErrorCode::INVALID_PARAMS,
                 "at most " + std::to_string(kMaxRdmaDevices) + " RDMA devices may be used");
  }
  std::vector<std::unique_ptr<VerbsDevice>> out;
  for (const auto& n : names) {
    MC_ASSIGN_OR_RETURN(auto d, verbs.Open(n));
    out.push_back(std::move(d));
  }
  return out;
}

Result<std::unique_ptr<RdmaEngine>> RdmaEngine::Create(
    std::vector<std::unique_ptr<VerbsDevice>> devices, ConnectorFactory connect,
    RdmaEngineOptions options) {
  MC_RETURN_IF_ERROR(CheckRdmaEngineOptions(options));
  if (devices.empty() || devices.size() > kMaxRdmaDevices) {
    return Error(ErrorCode::INVALID_PARAMS, "RDMA engine needs 1.." +
                                                std::to_string(kMaxRdmaDevices) + " devices");
  }
  std::unique_ptr<RdmaEngine> e(new RdmaEngine());
  e->devices_ = std::move(devices);
  e->connect_ = std::move(connect);
  e->options_ = options;
  e->clock_ = options.clock ? options.clock : &SystemClock::Instance();
  uint64_t chunk = options.max_mr_chunk_bytes ? options.max_mr_chunk_bytes : UINT64_MAX;
  for (const auto& d : e->devices_) {
    if (d->port().max_mr_size > 0) chunk = std::min(chunk, d->port().max_mr_size);
  }
  e->chunk_bytes_ = chunk == UINT64_MAX ? (1ull << 40) : chunk;
  e->inflight_.assign(e->devices_.size(), 0);
  e->stats_.bytes_per_device.assign(e->devices_.size(), 0);
  for (size_t i = 0; i < e->devices_.size(); ++i) {
    e->pollers_.emplace_back([raw = e.get(), i] { raw->PollLoop(i); });
  }
  return e;
}

RdmaEngine::~RdmaEngine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : pollers_) t.join();
  links_.clear();
  for (auto& [addr, r] : regs_) Deregister(r);
}

std::vector<std::string> RdmaEngine::device_names() const {
  std::vector<std::string> out;
  for (const auto& d : devices_) out.push_back(d->name());
  return out;
}

RdmaEngineStats RdmaEngine::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

Result<RdmaEngine::Registration> RdmaEngine::Register(void* addr, uint64_t len) {
  Registration reg;
  reg.addr = reinterpret_cast<uint64_t>(addr);
  reg.len = len;
  for (uint64_t off = 0; off < len; off += chunk_bytes_) {
    Region region;
    region.addr = reg.addr + off;
    region.len = std::min(chunk_bytes_, len - off);
    for (auto& d : devices_) {
      auto mr = d->RegisterMemory(reinterpret_cast<void*>(region.addr), region.len);
      if (!mr.ok()) {
        reg.regions.push_back(std::move(region));
        Deregister(reg);
        return mr.status();
      }
      region.mr.push_back(*mr);
    }
    reg.regions.push_back(std::move(region));
  }
  return reg;
}

void RdmaEngine::Deregister(Registration& r) {
  for (auto& region : r.regions) {
    for (size_t i = 0; i < region.mr.size(); ++i) devices_[i]->DeregisterMemory(region.mr[i]);
  }
  r.regions.clear();
}

Status RdmaEngine::RegisterBuffer(void* addr, uint64_t len) {
  if (addr == nullptr || len == 0) {
    return Error(ErrorCode::INVALID_PARAMS, "register_buffer: null or empty buffer");
  }
  {
    std::lock_guard<std::mutex> lock(reg_mu_);
    if (regs_.size() >= kMaxRegisteredBuffers) {
      return Error(ErrorCode::INVALID_PARAMS, "at most " + std::to_string(kMaxRegisteredBuffers) +
                                                  " buffers may be registered");
    }
    // Registering a buffer again is fine: a longer length replaces it.
    auto it = regs_.find(reinterpret_cast<uint64_t>(addr));
    if (it != regs_.end() && it->second.len >= len) return Status::Ok();
  }
  MC_ASSIGN_OR_RETURN(Registration reg, Register(addr, len));
  std::lock_guard<std::mutex> lock(reg_mu_);
  auto it = regs_.find(reg.addr);
  if (it != regs_.end()) {
    Deregister(it->second);
    regs_.erase(it);
  }
  regs_.emplace(reg.addr, std::move(reg));
  return Status::Ok();
}

Status RdmaEngine::UnregisterBuffer(void* addr) {
  std::lock_guard<std::mutex> lock(reg_mu_);
  auto it = regs_.find(reinterpret_cast<uint64_t>(addr));
  if (it == regs_.end()) return Error(ErrorCode::INVALID_PARAMS, "buffer is not registered");
  Deregister(it->second);
  regs_.erase(it);
  return Status::Ok();
}

const RdmaEngine::Region* RdmaEngine::FindRegion(const std::map<uint64_t, Registration>& regs,
                                                 uint64_t addr) const {
  auto it = regs.upper_bound(addr);
  if (it == regs.begin()) return nullptr;
  --it;
  const Registration& r = it->second;
  if (addr - r.addr >= r.len || r.regions.empty()) return nullptr;
  return &r.regions[(addr - r.addr) / chunk_bytes_];
}

Result<std::shared_ptr<RdmaEngine::Link>> RdmaEngine::GetLink(const Endpoint& ep, bool rebuild) {
  const std::string key = PeerKey(ep);
  {
    std::lock_guard<std::mutex> lock(link_mu_);
    auto no = no_rdma_.find(key);
    if (no != no_rdma_.end()) {
      if (clock_->NowUs() - no->second < kNoRdmaRecheckUs) {
        return Error(ErrorCode::NOT_SUPPORTED, key + " serves no RDMA");
      }
      no_rdma_.erase(no);
    }
    auto it = links_.find(key);
    if (it != links_.end()) {
      if (!rebuild && !it->second->dead.load() && it->second->conn->Alive()) return it->second;
      MC_LOG(INFO) << "rdma: rebuilding the connection to " << key;
      links_.erase(it);
    }
  }
  auto built = BuildLink(ep);
  std::lock_guard<std::mutex> lock(link_mu_);
  if (!built.ok()) {
    if (built.code() == ErrorCode::NOT_SUPPORTED) no_rdma_[key] = clock_->NowUs();
    return built.status();
  }
  links_[key] = *built;
  return *built;
}

Result<std::shared_ptr<const RdmaSegmentDesc>> RdmaEngine::PeerDescriptor(const Endpoint& ep) {
  MC_ASSIGN_OR_RETURN(std::shared_ptr<Link> link, GetLink(ep, /*rebuild=*/false));
  return std::shared_ptr<const RdmaSegmentDesc>(link, &link->desc);
}

Result<std::shared_ptr<RdmaEngine::Link>> RdmaEngine::BuildLink(const Endpoint& ep) {
  MC_ASSIGN_OR_RETURN(auto conn, connect_(ep));
  MC_ASSIGN_OR_RETURN(RdmaSegmentDesc desc, conn->Describe());
  const size_t nics = devices_.size(), qps = options_.qps_per_peer;
  auto link = std::make_shared<Link>(nics, qps, options_.max_outstanding_wrs);
  link->key = PeerKey(ep);
  for (const auto& b : desc.buffers) {
    const bool gap = !options_.absolute_addresses && link->seg_len > 0 &&
                     b.addr != desc.buffers[0].addr + link->seg_len;
    if (gap) return Error(ErrorCode::PROTOCOL_ERROR, "segment " + desc.name + " is not contiguous");
    link->seg_len += b.length;
  }
  for (size_t i = 0; i < nics; ++i) {
    VerbsDevice& dev = *devices_[i];
    const size_t rdev = i % desc.devices.size();
    RdmaConnectRequest req{static_cast<uint16_t>(rdev), dev.port().lid, dev.port().gid,
                           dev.port().active_mtu, {}};
    for (size_t q = 0; q < qps; ++q) {
      MC_ASSIGN_OR_RETURN(QueuePair qp, dev.CreateQp(options_.max_outstanding_wrs));
      link->qp.push_back(qp);
      link->lane_dev.push_back(i);
      link->lane_rdev.push_back(rdev);
      link->devp.push_back(&dev);
      req.qps.push_back({qp.qpn, RandomPsn()});
    }
    MC_ASSIGN_OR_RETURN(RdmaConnectReply reply, conn->Connect(req));
    if (reply.qps.size() != qps) {
      return Error(ErrorCode::PROTOCOL_ERROR, link->key + " answered " +
                                                  std::to_string(reply.qps.size()) + " QPs for " +
                                                  std::to_string(qps));
    }
    const RdmaDeviceDesc& rd = desc.devices[rdev];
    for (size_t q = 0; q < qps; ++q) {
      QpPeer peer{reply.qps[q].qpn, reply.qps[q].psn, rd.lid, rd.gid, rd.mtu};
      MC_RETURN_IF_ERROR(dev.ConnectQp(link->qp[i * qps + q], peer, req.qps[q].psn,
                                       options_.qp_timeout_exp, options_.qp_retry_cnt));
    }
  }
  link->desc = std::move(desc);
  link->conn = std::move(conn);
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.links_built;
  return link;
}

uint64_t RdmaEngine::RemoteBase(const Link& link, uint64_t remote_off) const {
  if (options_.absolute_addresses || link.desc.buffers.empty()) return remote_off;
  return link.desc.buffers[0].addr + remote_off;
}

bool RdmaEngine::IsOutside(const Status& st) {
  return st.code() == ErrorCode::INVALID_WRITE || st.code() == ErrorCode::INVALID_READ;
}

Status RdmaEngine::PlanOp(BatchCtx& ctx, size_t i, const std::shared_ptr<Link>& link) {
  const auto& info = ctx.info[i];
  const uint64_t len = info.len;
  if (options_.absolute_addresses ? !Covered(link->desc, info.remote_off, len)
                                  : info.remote_off > link->seg_len ||
                                        len > link->seg_len - info.remote_off) {
    return Error(info.kind == OpKind::kWrite ? ErrorCode::INVALID_WRITE : ErrorCode::INVALID_READ,
                 "range at offset " + std::to_string(info.remote_off) + " length " +
                     std::to_string(len) + " is outside segment " + link->desc.name);
  }
  const uint64_t base = reinterpret_cast<uint64_t>(info.buf);
  // Local memory: registered buffers, else this batch registers the range.
  std::unique_lock<std::mutex> reg_lock(reg_mu_);
  bool covered = true;
  for (uint64_t a = base; a < base + len;) {
    const Region* r = FindRegion(regs_, a);
    if (r == nullptr) {
      covered = false;
      break;
    }
    a = r->addr + r->len;
  }
  const Registration* own = nullptr;
  if (!covered) {
    reg_lock.unlock();
    MC_ASSIGN_OR_RETURN(Registration reg, Register(info.buf, len));
    ctx.temp.push_back(std::move(reg));
    own = &ctx.temp.back();
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.temp_registrations;
  }
  // Registered regions stay put while the batch runs (UnregisterBuffer must
  // not race a transfer), so slices keep pointers to them.
  auto find = [&](uint64_t addr) -> const Region* {
    if (own == nullptr) return FindRegion(regs_, addr);
    return &own->regions[(addr - own->addr) / chunk_bytes_];
  };
  const uint64_t remote_base = RemoteBase(*link, info.remote_off);
  auto room = [&](uint64_t off) -> uint64_t {
    const Region* r = find(base + off);
    uint64_t local = r->addr + r->len - (base + off);
    auto span = FindRemote(link->desc, remote_base + off, len - off);
    return std::min(local, span.ok() ? span->len : len - off);
  };
  for (const SliceRange& sr : CutSlices(len, options_.slice_bytes, room)) {
    Slice s;
    s.op = i;
    s.off = sr.offset;
    s.len = sr.len;
    s.local = find(base + sr.offset);
    ctx.slices.push_back(s);
  }
  return Status::Ok();
}

void RdmaEngine::FailSlice(BatchCtx& ctx, Slice& s, const std::string& why) {
  if (s.done) return;
  s.done = true;
  --ctx.remaining;
  if (ctx.op_error[s.op].empty()) ctx.op_error[s.op] = why;
}

void RdmaEngine::PostQueued(BatchCtx& ctx, const std::shared_ptr<BatchCtx>& self) {
  bool posted = false;
  for (size_t k = ctx.queue.size(); k > 0; --k) {
    const size_t idx = ctx.queue.front();
    ctx.queue.pop_front();
    Slice& s = ctx.slices[idx];
    if (s.done) continue;
    const std::shared_ptr<Link>& link = ctx.op_link[s.op];
    const int lane = link->sched.Pick(s.last_lane);
    if (lane < 0) {
      ctx.queue.push_back(idx);
      continue;
    }
    const auto& info = ctx.info[s.op];
    const size_t dev = link->lane_dev[lane];
    const uint64_t raddr = RemoteBase(*link, info.remote_off) + s.off;
    auto span = FindRemote(link->desc, raddr, s.len);
    if (!span.ok() || span->len < s.len) {
      link->sched.Done(lane);
      FailSlice(ctx, s, "segment " + link->desc.name + " changed its layout (restarted?)");
      continue;
    }
    WorkRequest wr;
    wr.kind = info.kind == OpKind::kWrite ? WrKind::kWrite : WrKind::kRead;
    wr.local_addr = reinterpret_cast<uint64_t>(info.buf) + s.off;
    wr.lkey = s.local->mr[dev].lkey;
    wr.remote_addr = raddr;
    wr.rkey = link->desc.buffers[span->buffer].rkey[link->lane_rdev[lane]];
    wr.length = static_cast<uint32_t>(s.len);
    auto* f = new Inflight{self, idx, link, lane};
    wr.wr_id = reinterpret_cast<uint64_t>(f);
    Status st = devices_[dev]->Post(link->qp[lane], {&wr, 1});
    if (!st.ok()) {
      delete f;
      link->sched.Done(lane);
      link->sched.MarkBroken(lane);
      if (!link->sched.AnyHealthy()) link->dead.store(true);
      s.last_lane = lane;
      if (++s.attempts >= kMaxSliceAttempts) FailSlice(ctx, s, st.message());
      else ctx.queue.push_back(idx);
      continue;
    }
    ++inflight_[dev];
    ++stats_.slices;
    posted = true;
  }
  if (posted) work_cv_.notify_all();
}

void RdmaEngine::OnCompletion(size_t device, const Completion& c) {
  std::unique_ptr<Inflight> f(reinterpret_cast<Inflight*>(c.wr_id));
  --inflight_[device];
  BatchCtx& ctx = *f->ctx;
  Link& link = *f->link;
  Slice& s = ctx.slices[f->slice];
  link.sched.Done(f->lane);
  if (c.ok) {
    if (!s.done) {
      s.done = true;
      --ctx.remaining;
      stats_.bytes_per_device[device] += s.len;
    }
    return;
  }
  if (!link.sched.broken(f->lane)) {
    // The QP is in ERROR now: its other WRs flush. It goes with the link.
    link.sched.MarkBroken(f->lane);
    devices_[device]->ErrorQp(link.qp[f->lane]);
    ++stats_.qp_errors;
    if (!link.sched.AnyHealthy()) link.dead.store(true);
    MC_LOG(WARN) << "rdma: " << devices_[device]->name() << " QP " << c.qpn << " to "
                 << link.key << " failed: " << c.error;
  }
  s.last_lane = f->lane;
  if (ctx.expired || ++s.attempts >= kMaxSliceAttempts) {
    FailSlice(ctx, s, "RDMA " + std::string(OpKindName(ctx.info[s.op].kind)) + " to " + link.key +
                          " failed on " + devices_[device]->name() + ": " + c.error);
  } else if (!s.done) {
    ++stats_.retried_slices;
    ctx.queue.push_back(f->slice);
  }
}

void RdmaEngine::PollLoop(size_t device) {
  Completion buf[32];
  VerbsDevice& dev = *devices_[device];
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stopping_ || inflight_[device] > 0; });
      if (inflight_[device] == 0) return;  // stopping with nothing in flight
    }
    auto n = dev.Poll(buf);
    if (!n.ok()) {
      MC_LOG(ERROR) << n.status().ToString();
      dev.WaitForCompletion(kPollWaitMs);
      continue;
    }
    if (*n == 0) {
      dev.WaitForCompletion(kPollWaitMs);
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < *n; ++i) OnCompletion(device, buf[i]);
    batch_cv_.notify_all();
  }
}

void RdmaEngine::ExpireBatch(BatchCtx& ctx) {
  ctx.expired = true;
  ++stats_.timeouts;
  for (size_t idx : ctx.queue) {
    FailSlice(ctx, ctx.slices[idx], "RDMA transfer timed out after " +
                                        std::to_string(options_.timeout_us / 1000) + " ms");
  }
  ctx.queue.clear();
  // Whatever is still in flight goes to peers that stopped answering: error
  // their QPs so the WRs flush (and fail) now.
  for (const auto& link : ctx.op_link) {
    if (!link) continue;
    for (size_t lane = 0; lane < link->qp.size(); ++lane) {
      if (link->sched.outstanding(static_cast<int>(lane)) == 0) continue;
      if (!link->sched.broken(static_cast<int>(lane))) {
        link->sched.MarkBroken(static_cast<int>(lane));
        link->devp[lane]->ErrorQp(link->qp[lane]);
      }
    }
    link->dead.store(true);
  }
  for (size_t i = 0; i < ctx.op_error.size(); ++i) {
    if (ctx.op_link[i] && ctx.op_error[i].empty()) {
      ctx.op_error[i] = "RDMA transfer to " + ctx.op_link[i]->key + " timed out after " +
                        std::to_string(options_.timeout_us / 1000) + " ms";
    }
  }
}

void RdmaEngine::RebuildStarvedLinks(BatchCtx& ctx, std::span<TransferOp> ops,
                                     std::set<std::string>& rebuilt,
                                     std::unique_lock<std::mutex>& lock) {
  for (size_t idx : std::vector<size_t>(ctx.queue.begin(), ctx.queue.end())) {
    const size_t op = ctx.slices[idx].op;
    std::shared_ptr<Link> link = ctx.op_link[op];
    if (link->sched.AnyHealthy()) continue;
    if (!rebuilt.insert(link->key).second) {
      if (link == ctx.op_link[op]) {
        FailSlice(ctx, ctx.slices[idx], "RDMA connection to " + link->key +
                                              " failed again after a rebuild");
      }
      continue;
    }
    lock.unlock();
    auto fresh = GetLink(*ops[op].endpoint, true);
    lock.lock();
    for (size_t j = 0; j < ops.size(); ++j) {
      if (ctx.op_link[j] != link) continue;
      if (fresh.ok()) ctx.op_link[j] = *fresh;
      else ctx.op_error[j] = "RDMA reconnect to " + link->key + ": " + fresh.status().message();
    }
    if (!fresh.ok()) {
      for (size_t q : ctx.queue) {
        if (ctx.op_link[ctx.slices[q].op] == link) FailSlice(ctx, ctx.slices[q], "");
      }
    }
  }
}

Status RdmaEngine::Batch(std::span<TransferOp> ops) {
  MC_RETURN_IF_ERROR(ValidateBatch(ops));
  auto ctx = std::make_shared<BatchCtx>();
  ctx->engine = this;
  ctx->info.resize(ops.size());
  ctx->op_link.resize(ops.size());
  ctx->op_error.resize(ops.size());
  std::vector<bool> planned(ops.size(), false);
  std::set<std::string> redescribed;
  for (size_t i = 0; i < ops.size(); ++i) {
    ctx->info[i] = {ops[i].kind, static_cast<uint8_t*>(ops[i].buffer), ops[i].remote_offset,
                    ops[i].len};
    ops[i].status = Status::Ok();
    if (ops[i].len == 0) continue;
    auto link = GetLink(*ops[i].endpoint, false);
    Status st = link.ok() ? PlanOp(*ctx, i, *link) : link.status();
    if (options_.absolute_addresses && link.ok() && IsOutside(st) &&
        redescribed.insert(PeerKey(*ops[i].endpoint)).second) {
      link = GetLink(*ops[i].endpoint, true);  // it may have registered more since
      st = link.ok() ? PlanOp(*ctx, i, *link) : link.status();
    }
    if (!st.ok()) {
      ops[i].status = st;
      continue;
    }
    ctx->op_link[i] = *link;
    planned[i] = true;
  }
  const uint64_t deadline = clock_->NowUs() + options_.timeout_us;
  std::set<std::string> rebuilt;
  std::unique_lock<std::mutex> lock(mu_);
  ctx->remaining = ctx->slices.size();
  for (size_t i = 0; i < ctx->slices.size(); ++i) ctx->queue.push_back(i);
  while (ctx->remaining > 0 && !ctx->expired) {
    PostQueued(*ctx, ctx);
    RebuildStarvedLinks(*ctx, ops, rebuilt, lock);
    if (ctx->remaining == 0) break;
    if (clock_->NowUs() >= deadline) {
      ExpireBatch(*ctx);
      break;
    }
    batch_cv_.wait_for(lock, std::chrono::microseconds(kWakeUs));
  }
  if (ctx->remaining > 0) {
    batch_cv_.wait_for(lock, std::chrono::microseconds(kFlushWaitUs),
                       [&] { return ctx->remaining == 0; });
  }
  Status first;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (planned[i] && !ctx->op_error[i].empty()) {
      ops[i].status = Error(ErrorCode::TRANSFER_FAIL, ctx->op_error[i]);
      ++stats_.failed_ops;
    }
    if (first.ok() && !ops[i].status.ok()) first = ops[i].status;
  }
  return first;
}

}  // namespace mc::transfer

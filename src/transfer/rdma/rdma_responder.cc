#include "transfer/rdma/rdma_responder.h"

#include <algorithm>
#include <random>

#include "transfer/rdma/rdma_sealed.h"

namespace mc::transfer {

Result<std::unique_ptr<RdmaResponder>> RdmaResponder::Create(
    std::vector<std::unique_ptr<VerbsDevice>> devices, const std::string& name, uint8_t* base,
    uint64_t size_bytes, uint64_t max_mr_chunk_bytes) {
  if (devices.empty() || devices.size() > kMaxRdmaDevices) {
    return Error(ErrorCode::INVALID_PARAMS, "RDMA needs 1.." + std::to_string(kMaxRdmaDevices) +
                                                " devices");
  }
  std::unique_ptr<RdmaResponder> r(new RdmaResponder());
  uint64_t chunk = max_mr_chunk_bytes ? max_mr_chunk_bytes : UINT64_MAX;
  for (const auto& d : devices) {
    if (d->port().max_mr_size > 0) chunk = std::min(chunk, d->port().max_mr_size);
  }
  if (chunk == UINT64_MAX) chunk = size_bytes > 0 ? size_bytes : UINT64_MAX / 2;
  if ((size_bytes + chunk - 1) / chunk > kMaxRdmaDescBuffers) {
    return Error(ErrorCode::INVALID_PARAMS,
                 "segment of " + std::to_string(size_bytes) + " bytes needs more than " +
                     std::to_string(kMaxRdmaDescBuffers) + " memory regions of " +
                     std::to_string(chunk) + " bytes");
  }
  r->devices_ = std::move(devices);
  r->chunk_bytes_ = chunk;
  r->desc_.name = name;
  r->mrs_.resize(r->devices_.size());
  for (const auto& d : r->devices_) {
    r->desc_.devices.push_back({d->name(), d->port().lid, d->port().gid, d->port().active_mtu});
  }
  if (size_bytes == 0) return r;  // regions come with AddRegion
  Region seg;
  MC_RETURN_IF_ERROR(r->RegisterChunks(base, size_bytes, "segment " + name, &seg));
  for (size_t b = 0; b < seg.buffers.size(); ++b) {
    for (size_t i = 0; i < r->devices_.size(); ++i) {
      r->mrs_[i].push_back(seg.mrs[b * r->devices_.size() + i]);
    }
  }
  r->desc_.buffers = std::move(seg.buffers);
  return r;
}

Status RdmaResponder::AddEpochTable(uint8_t* at, uint64_t len, uint64_t nonce) {
  const auto addr = reinterpret_cast<uint64_t>(at);
  if (desc_.buffers.empty() || len == 0 ||
      desc_.buffers.back().addr + desc_.buffers.back().length != addr) {
    return Error(ErrorCode::INVALID_PARAMS, "the epoch table must follow the segment");
  }
  Region table;
  MC_RETURN_IF_ERROR(RegisterChunks(at, len, "the epoch table of " + desc_.name, &table));
  for (size_t b = 0; b < table.buffers.size(); ++b) {
    table.buffers[b].name = EpochTableBufferName(nonce);
    for (size_t i = 0; i < devices_.size(); ++i) {
      mrs_[i].push_back(table.mrs[b * devices_.size() + i]);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  desc_.buffers.insert(desc_.buffers.end(), table.buffers.begin(), table.buffers.end());
  return Status::Ok();
}

Status RdmaResponder::RegisterChunks(uint8_t* base, uint64_t len, const std::string& what,
                                     Region* out) {
  for (uint64_t off = 0; off < len; off += chunk_bytes_) {
    RdmaBufferDesc b;
    b.name = desc_.name;
    b.addr = reinterpret_cast<uint64_t>(base + off);
    b.length = std::min(chunk_bytes_, len - off);
    for (size_t i = 0; i < devices_.size(); ++i) {
      auto mr = devices_[i]->RegisterMemory(base + off, b.length);
      if (!mr.ok()) {
        Deregister(*out);
        return Error(mr.code(), "registering " + what + " on " + devices_[i]->name() + ": " +
                                    mr.status().message());
      }
      out->mrs.push_back(*mr);
      b.rkey.push_back(mr->rkey);
      b.lkey.push_back(mr->lkey);
    }
    out->buffers.push_back(std::move(b));
  }
  return Status::Ok();
}

void RdmaResponder::Deregister(const Region& r) {
  for (size_t k = 0; k < r.mrs.size(); ++k) devices_[k % devices_.size()]->DeregisterMemory(r.mrs[k]);
}

RdmaSegmentDesc RdmaResponder::desc() const {
  std::lock_guard<std::mutex> lock(mu_);
  RdmaSegmentDesc d = desc_;
  for (const auto& [addr, r] : regions_) d.buffers.insert(d.buffers.end(), r.buffers.begin(), r.buffers.end());
  return d;
}

Status RdmaResponder::AddRegion(uint8_t* base, uint64_t len) {
  const auto addr = reinterpret_cast<uint64_t>(base);
  if (base == nullptr || len == 0 || len > UINT64_MAX - addr) {
    return Error(ErrorCode::INVALID_PARAMS, "cannot register an empty, null or wrapping region");
  }
  const uint64_t chunks = (len + chunk_bytes_ - 1) / chunk_bytes_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto next = regions_.lower_bound(addr);
    const bool overlaps =
        (next != regions_.end() && next->first < addr + len) ||
        (next != regions_.begin() && std::prev(next)->second.buffers.back().addr +
                                             std::prev(next)->second.buffers.back().length > addr);
    if (overlaps || region_buffers_ + chunks > kMaxRdmaDescBuffers) {
      return Error(ErrorCode::INVALID_PARAMS,
                   overlaps ? "region overlaps one registered for RDMA"
                            : "more than " + std::to_string(kMaxRdmaDescBuffers) +
                                  " RDMA memory regions (kMaxRdmaDescBuffers)");
    }
    region_buffers_ += chunks;  // reserved while registering
  }
  Region r;
  Status st = RegisterChunks(base, len, "region at " + std::to_string(addr), &r);
  std::lock_guard<std::mutex> lock(mu_);
  if (!st.ok() || !regions_.try_emplace(addr, std::move(r)).second) {
    region_buffers_ -= chunks;
    if (st.ok()) {
      Deregister(r);
      st = Error(ErrorCode::INVALID_PARAMS, "region registered twice at once");
    }
  }
  return st;
}

Status RdmaResponder::RemoveRegion(uint64_t addr) {
  Region r;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = regions_.find(addr);
    if (it == regions_.end()) {
      return Error(ErrorCode::INVALID_PARAMS, "no RDMA region at " + std::to_string(addr));
    }
    r = std::move(it->second);
    region_buffers_ -= r.buffers.size();
    regions_.erase(it);
  }
  Deregister(r);
  return Status::Ok();
}

RdmaResponder::~RdmaResponder() {
  for (auto& [conn, qps] : qps_) {
    for (auto& [dev, qp] : qps) devices_[dev]->DestroyQp(qp);
  }
  for (size_t i = 0; i < mrs_.size(); ++i) {
    for (auto& mr : mrs_[i]) devices_[i]->DeregisterMemory(mr);
  }
  for (const auto& [addr, r] : regions_) Deregister(r);
}

size_t RdmaResponder::qp_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

std::vector<std::string> RdmaResponder::device_names() const {
  std::vector<std::string> out;
  for (const auto& d : devices_) out.push_back(d->name());
  return out;
}

Result<RdmaConnectReply> RdmaResponder::Connect(uint64_t conn_id, const RdmaConnectRequest& req) {
  if (req.device >= devices_.size()) {
    return Error(ErrorCode::INVALID_PARAMS, "no RDMA device " + std::to_string(req.device) +
                                                " on segment " + desc_.name);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (count_ + req.qps.size() > kMaxResponderQps) {
      return Error(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                   "store holds " + std::to_string(count_) + " RDMA QPs (limit " +
                       std::to_string(kMaxResponderQps) + ")");
    }
    count_ += req.qps.size();
  }
  VerbsDevice& dev = *devices_[req.device];
  static thread_local std::mt19937 rng(std::random_device{}());
  RdmaConnectReply reply;
  std::vector<std::pair<size_t, QueuePair>> made;
  Status st;
  for (const QpAddress& peer : req.qps) {
    auto qp = dev.CreateQp(1);
    if (!qp.ok()) {
      st = qp.status();
      break;
    }
    made.emplace_back(req.device, *qp);
    const uint32_t psn = rng() & 0xffffff;
    st = dev.ConnectQp(*qp, {peer.qpn, peer.psn, req.lid, req.gid, req.mtu}, psn, 14, 7);
    if (!st.ok()) break;
    reply.qps.push_back({qp->qpn, psn});
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!st.ok()) {
    for (auto& [d, qp] : made) devices_[d]->DestroyQp(qp);
    count_ -= req.qps.size();
    return st;
  }
  count_ -= req.qps.size() - made.size();
  auto& owned = qps_[conn_id];
  owned.insert(owned.end(), made.begin(), made.end());
  return reply;
}

void RdmaResponder::Release(uint64_t conn_id) {
  std::vector<std::pair<size_t, QueuePair>> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = qps_.find(conn_id);
    if (it == qps_.end()) return;
    gone.swap(it->second);
    qps_.erase(it);
    count_ -= gone.size();
  }
  for (auto& [d, qp] : gone) devices_[d]->DestroyQp(qp);
}

}  // namespace mc::transfer

#include "transfer/rdma/verbs_fake.h"

#include <cstring>

namespace mc::transfer {

class FakeDevice final : public VerbsDevice {
 public:
  FakeDevice(FakeFabric* f, std::string name, PortInfo port)
      : f_(f), name_(std::move(name)), port_(port) {}
  const std::string& name() const override { return name_; }
  const PortInfo& port() const override { return port_; }

  Result<MemoryRegion> RegisterMemory(void* addr, uint64_t length) override {
    if (length > port_.max_mr_size) {
      return Error(ErrorCode::INVALID_PARAMS, "fake: MR larger than max_mr_size");
    }
    std::lock_guard<std::mutex> lock(f_->mu_);
    uint32_t key = f_->next_key_++;
    f_->mrs_[key] = {reinterpret_cast<uint64_t>(addr), length, name_};
    return MemoryRegion{addr, length, key, key, nullptr};
  }
  void DeregisterMemory(const MemoryRegion& mr) override {
    std::lock_guard<std::mutex> lock(f_->mu_);
    f_->mrs_.erase(mr.lkey);
  }
  Result<QueuePair> CreateQp(uint32_t) override {
    std::lock_guard<std::mutex> lock(f_->mu_);
    uint32_t qpn = f_->next_qpn_++;
    f_->qps_[qpn].device = name_;
    return QueuePair{qpn, nullptr};
  }
  Status ConnectQp(const QueuePair& qp, const QpPeer& peer, uint32_t, uint8_t, uint8_t) override {
    std::lock_guard<std::mutex> lock(f_->mu_);
    auto& q = f_->qps_[qp.qpn];
    q.peer_qpn = peer.qpn;
    q.connected = true;
    return Status::Ok();
  }
  void ErrorQp(const QueuePair& qp) override {
    std::lock_guard<std::mutex> lock(f_->mu_);
    auto& q = f_->qps_[qp.qpn];
    q.error = true;
    for (auto& c : q.held) {
      c.ok = false;
      c.error = "WR flushed with error";
      f_->cqs_[name_].push_back(c);
    }
    q.held.clear();
  }
  void DestroyQp(const QueuePair& qp) override {
    std::lock_guard<std::mutex> lock(f_->mu_);
    f_->qps_.erase(qp.qpn);
  }

  Status Post(const QueuePair& qp, std::span<const WorkRequest> wrs) override {
    std::lock_guard<std::mutex> lock(f_->mu_);
    auto it = f_->qps_.find(qp.qpn);
    if (it == f_->qps_.end() || !it->second.connected) {
      return Error(ErrorCode::TRANSFER_FAIL, "fake: post on an unconnected QP");
    }
    Qp& q = it->second;
    for (const WorkRequest& w : wrs) {
      f_->posts_[name_]++;
      f_->posts_per_qp_[qp.qpn]++;
      Completion c{w.wr_id, qp.qpn, false, ""};
      auto peer = f_->qps_.find(q.peer_qpn);
      const std::string peer_dev = peer == f_->qps_.end() ? "" : peer->second.device;
      if (q.error) {
        c.error = "WR flushed with error";
      } else if (f_->holes_.count(peer_dev)) {
        q.held.push_back(c);
        continue;
      } else if (f_->fail_next_ > 0) {
        --f_->fail_next_;
        c.error = "injected failure";
      } else if (peer == f_->qps_.end() || f_->dead_.count(peer_dev) || f_->dead_.count(name_)) {
        c.error = "transport retry counter exceeded";
      } else {
        c.ok = Copy(w, peer_dev, &c.error);
      }
      if (!c.ok) q.error = true;  // a real QP goes to ERROR on a failed WR
      f_->cqs_[name_].push_back(c);
    }
    return Status::Ok();
  }

  Result<size_t> Poll(std::span<Completion> out) override {
    std::lock_guard<std::mutex> lock(f_->mu_);
    auto& cq = f_->cqs_[name_];
    size_t n = 0;
    while (n < out.size() && !cq.empty()) {
      out[n++] = cq.front();
      cq.pop_front();
    }
    return n;
  }
  void WaitForCompletion(int) override {}

 private:
  using Mr = FakeFabric::Mr;
  using Qp = FakeFabric::Qp;
  // mu_ held. The checks a NIC makes: both keys valid on the right devices
  // and both ranges inside their regions.
  bool Copy(const WorkRequest& w, const std::string& peer_dev, std::string* err) {
    auto l = f_->mrs_.find(w.lkey);
    auto r = f_->mrs_.find(w.rkey);
    auto inside = [](const Mr& m, uint64_t a, uint64_t n) {
      return a >= m.addr && n <= m.len && a - m.addr <= m.len - n;
    };
    if (l == f_->mrs_.end() || l->second.device != name_ || !inside(l->second, w.local_addr, w.length)) {
      *err = "local protection error";
      return false;
    }
    if (r == f_->mrs_.end() || r->second.device != peer_dev ||
        !inside(r->second, w.remote_addr, w.length)) {
      *err = "remote access error";
      return false;
    }
    auto* local = reinterpret_cast<uint8_t*>(w.local_addr);
    auto* remote = reinterpret_cast<uint8_t*>(w.remote_addr);
    if (w.kind == WrKind::kWrite) std::memcpy(remote, local, w.length);
    else std::memcpy(local, remote, w.length);
    return true;
  }

  FakeFabric* f_;
  std::string name_;
  PortInfo port_;
};

void FakeFabric::AddDevice(const std::string& name, DeviceOptions o) {
  std::lock_guard<std::mutex> lock(mu_);
  devices_[name] = o;
}
void FakeFabric::FailNextWrs(int n) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_next_ = n;
}
void FakeFabric::KillDevice(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  dead_.insert(name);
}
void FakeFabric::BlackHoleDevice(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  holes_.insert(name);
}
void FakeFabric::ReviveDevice(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  dead_.erase(name);
  holes_.erase(name);
}
uint64_t FakeFabric::posts(const std::string& device) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = posts_.find(device);
  return it == posts_.end() ? 0 : it->second;
}
std::map<uint32_t, uint64_t> FakeFabric::posts_per_qp() const {
  std::lock_guard<std::mutex> lock(mu_);
  return posts_per_qp_;
}
size_t FakeFabric::live_qps() const {
  std::lock_guard<std::mutex> lock(mu_);
  return qps_.size();
}
size_t FakeFabric::live_mrs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return mrs_.size();
}

Result<std::vector<std::string>> FakeVerbs::ListDevices() {
  std::lock_guard<std::mutex> lock(fabric_->mu_);
  std::vector<std::string> out;
  for (const auto& [n, o] : fabric_->devices_) out.push_back(n);
  return out;
}

Result<std::unique_ptr<VerbsDevice>> FakeVerbs::Open(const std::string& name) {
  std::lock_guard<std::mutex> lock(fabric_->mu_);
  auto it = fabric_->devices_.find(name);
  if (it == fabric_->devices_.end()) {
    return Error(ErrorCode::INVALID_PARAMS, "RDMA device " + name + " not found");
  }
  if (!it->second.active) {
    return Error(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                 "RDMA device " + name + " port 1 is DOWN, not ACTIVE");
  }
  PortInfo p;
  p.gid[15] = static_cast<uint8_t>(fabric_->devices_.size());
  p.max_mr_size = it->second.max_mr_size;
  p.active_mtu = 3;
  return std::unique_ptr<VerbsDevice>(new FakeDevice(fabric_, name, p));
}

}  // namespace mc::transfer

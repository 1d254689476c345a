// FakeFabric: an in-process stand-in for RDMA NICs behind the verbs seam
// (verbs.h), for unit tests. Every device of one fabric sees the same
// process memory, so an RDMA WRITE is a memcpy to the remote address after
// the rkey and bounds check a NIC would make. Completions are queued at post
// time. Tests inject failures: the next N WRs fail, or every WR touching a
// device fails (a dead peer) or never completes until its QP is errored.
// Thread-safe.
#pragma once

#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "transfer/rdma/verbs.h"

namespace mc::transfer {

class FakeFabric {
 public:
  struct DeviceOptions {
    bool active;
    uint64_t max_mr_size;
  };
  // Adds a device that Open() finds.
  void AddDevice(const std::string& name, DeviceOptions o = {true, 1ull << 30});

  void FailNextWrs(int n);                       // complete with an error
  void KillDevice(const std::string& name);      // WRs to or from it fail
  void BlackHoleDevice(const std::string& name); // WRs to it never complete
  void ReviveDevice(const std::string& name);

  // WRs posted per device name and per QP number.
  uint64_t posts(const std::string& device) const;
  std::map<uint32_t, uint64_t> posts_per_qp() const;
  size_t live_qps() const;
  size_t live_mrs() const;

 private:
  friend class FakeDevice;
  friend class FakeVerbs;
  struct Mr {
    uint64_t addr, len;
    std::string device;
  };
  struct Qp {
    std::string device;
    uint32_t peer_qpn = 0;
    bool connected = false;
    bool error = false;
    std::deque<Completion> held;  // black-holed WRs, flushed on error
  };
  mutable std::mutex mu_;
  std::map<std::string, DeviceOptions> devices_;
  std::map<uint32_t, Mr> mrs_;  // by rkey (== lkey)
  std::map<uint32_t, Qp> qps_;
  std::map<std::string, std::deque<Completion>> cqs_;
  std::set<std::string> dead_, holes_;
  std::map<std::string, uint64_t> posts_;
  std::map<uint32_t, uint64_t> posts_per_qp_;
  int fail_next_ = 0;
  uint32_t next_key_ = 100, next_qpn_ = 1000;
};

class FakeVerbs final : public Verbs {
 public:
  explicit FakeVerbs(FakeFabric* fabric) : fabric_(fabric) {}
  Result<std::vector<std::string>> ListDevices() override;
  Result<std::unique_ptr<VerbsDevice>> Open(const std::string& name) override;

 private:
  FakeFabric* fabric_;
};

}  // namespace mc::transfer

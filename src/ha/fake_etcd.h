// FakeEtcd: an in-memory EtcdKv for unit tests, with etcd's semantics where
// HA relies on them: one revision per write txn, create/mod revisions,
// compares, leases that expire on an injected clock (taking their keys with
// them), ranges in key order with a limit. `SetDown(true)` makes every call
// fail as an unreachable cluster does. Thread-safe.
#pragma once

#include <map>
#include <mutex>

#include "common/clock.h"
#include "ha/etcd.h"

namespace mc::ha {

class FakeEtcd final : public EtcdKv {
 public:
  explicit FakeEtcd(const Clock& clock) : clock_(clock) {}

  Result<TxnResult> Commit(const Txn& txn) override;
  Result<RangeResult> Range(const std::string& key, const std::string& range_end,
                            int64_t limit) override;
  Result<int64_t> LeaseGrant(int64_t ttl_s) override;
  Result<int64_t> LeaseKeepAlive(int64_t lease_id) override;
  Status LeaseRevoke(int64_t lease_id) override;
  Status Compact(int64_t revision) override;
  Result<StatusResult> MemberStatus() override;

  void SetDown(bool down);
  size_t key_count() const;
  int64_t revision() const;
  uint64_t commits() const;

 private:
  struct Lease {
    int64_t ttl_s = 0;
    uint64_t expires_us = 0;
  };
  Status CheckUp() const;    // under mu_
  void ExpireLeases();       // under mu_
  bool Holds(const Compare& c) const;  // under mu_
  RangeResult DoRange(const TxnOp& op) const;  // under mu_
  void Apply(const TxnOp& op);  // under mu_

  const Clock& clock_;
  mutable std::mutex mu_;
  std::map<std::string, KeyValue> kvs_;
  std::map<int64_t, Lease> leases_;
  int64_t revision_ = 1;
  int64_t next_lease_ = 1000;
  uint64_t commits_ = 0;
  uint64_t value_bytes_ = 0;
  bool down_ = false;
  bool wrote_ = false;  // the current txn changed something
};

}  // namespace mc::ha

#include "ha/fake_etcd.h"

namespace mc::ha {

Status FakeEtcd::CheckUp() const {
  if (down_) return Error(ErrorCode::RPC_FAIL, "fake etcd is down");
  return Status::Ok();
}

void FakeEtcd::ExpireLeases() {
  const uint64_t now = clock_.NowUs();
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (it->second.expires_us > now) {
      ++it;
      continue;
    }
    bool deleted = false;
    for (auto kv = kvs_.begin(); kv != kvs_.end();) {
      if (kv->second.lease == it->first) {
        kv = kvs_.erase(kv);
        deleted = true;
      } else {
        ++kv;
      }
    }
    if (deleted) ++revision_;
    it = leases_.erase(it);
  }
}

bool FakeEtcd::Holds(const Compare& c) const {
  auto it = kvs_.find(c.key);
  const KeyValue none;
  const KeyValue& kv = it == kvs_.end() ? none : it->second;
  switch (c.target) {
    case Compare::Target::kCreate: return kv.create_revision == c.number;
    case Compare::Target::kMod: return kv.mod_revision == c.number;
    case Compare::Target::kLease: return kv.lease == c.number;
    case Compare::Target::kValue: return it != kvs_.end() && kv.value == c.value;
  }
  return false;
}

RangeResult FakeEtcd::DoRange(const TxnOp& op) const {
  RangeResult out;
  if (op.range_end.empty()) {
    auto it = kvs_.find(op.key);
    if (it != kvs_.end()) out.kvs.push_back(it->second);
    return out;
  }
  const bool to_end = op.range_end == std::string(1, '\0');
  for (auto it = kvs_.lower_bound(op.key); it != kvs_.end(); ++it) {
    if (!to_end && it->first >= op.range_end) break;
    if (op.limit != 0 && static_cast<int64_t>(out.kvs.size()) == op.limit) {
      out.more = true;
      break;
    }
    out.kvs.push_back(it->second);
  }
  return out;
}

void FakeEtcd::Apply(const TxnOp& op) {
  if (op.kind == TxnOp::Kind::kPut) {
    KeyValue& kv = kvs_[op.key];
    if (kv.create_revision == 0) kv.create_revision = revision_ + 1;
    kv.key = op.key;
    kv.value = op.value;
    kv.mod_revision = revision_ + 1;
    kv.lease = op.lease;
    value_bytes_ += op.value.size();
    wrote_ = true;
  } else if (op.kind == TxnOp::Kind::kDeleteRange) {
    for (const KeyValue& kv : DoRange({.kind = TxnOp::Kind::kRange, .key = op.key,
                                       .range_end = op.range_end}).kvs) {
      kvs_.erase(kv.key);
      wrote_ = true;
    }
  }
}

Result<TxnResult> FakeEtcd::Commit(const Txn& txn) {
  std::lock_guard<std::mutex> lock(mu_);
  MC_RETURN_IF_ERROR(CheckUp());
  ExpireLeases();
  for (const TxnOp& op : txn.success) {
    if (op.lease != 0 && !leases_.count(op.lease)) {
      return Error(ErrorCode::INVALID_PARAMS, "etcdserver: requested lease not found");
    }
  }
  TxnResult out;
  out.succeeded = true;
  for (const Compare& c : txn.compare) out.succeeded = out.succeeded && Holds(c);
  wrote_ = false;
  for (const TxnOp& op : out.succeeded ? txn.success : txn.failure) {
    if (op.kind == TxnOp::Kind::kRange) {
      out.ranges.push_back(DoRange(op));
    } else {
      Apply(op);
    }
  }
  if (wrote_) ++revision_;
  ++commits_;
  out.revision = revision_;
  return out;
}

Result<RangeResult> FakeEtcd::Range(const std::string& key, const std::string& range_end,
                                    int64_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  MC_RETURN_IF_ERROR(CheckUp());
  ExpireLeases();
  return DoRange({.kind = TxnOp::Kind::kRange, .key = key, .range_end = range_end, .limit = limit});
}

Result<int64_t> FakeEtcd::LeaseGrant(int64_t ttl_s) {
  std::lock_guard<std::mutex> lock(mu_);
  MC_RETURN_IF_ERROR(CheckUp());
  const int64_t id = next_lease_++;
  leases_[id] = {ttl_s, clock_.NowUs() + static_cast<uint64_t>(ttl_s) * 1000000};
  return id;
}

Result<int64_t> FakeEtcd::LeaseKeepAlive(int64_t lease_id) {
  std::lock_guard<std::mutex> lock(mu_);
  MC_RETURN_IF_ERROR(CheckUp());
  ExpireLeases();
  auto it = leases_.find(lease_id);
  if (it == leases_.end()) return int64_t{0};
  it->second.expires_us = clock_.NowUs() + static_cast<uint64_t>(it->second.ttl_s) * 1000000;
  return it->second.ttl_s;
}

Status FakeEtcd::LeaseRevoke(int64_t lease_id) {
  std::lock_guard<std::mutex> lock(mu_);
  MC_RETURN_IF_ERROR(CheckUp());
  auto it = leases_.find(lease_id);
  if (it != leases_.end()) it->second.expires_us = 0;
  ExpireLeases();
  return Status::Ok();
}

Status FakeEtcd::Compact(int64_t) {
  std::lock_guard<std::mutex> lock(mu_);
  return CheckUp();
}

Result<StatusResult> FakeEtcd::MemberStatus() {
  std::lock_guard<std::mutex> lock(mu_);
  MC_RETURN_IF_ERROR(CheckUp());
  int64_t live = 0;
  for (const auto& [k, kv] : kvs_) live += static_cast<int64_t>(k.size() + kv.value.size());
  return StatusResult{.db_size_bytes = live, .db_size_in_use_bytes = live, .revision = revision_};
}

void FakeEtcd::SetDown(bool down) {
  std::lock_guard<std::mutex> lock(mu_);
  down_ = down;
}
size_t FakeEtcd::key_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kvs_.size();
}
int64_t FakeEtcd::revision() const {
  std::lock_guard<std::mutex> lock(mu_);
  return revision_;
}
uint64_t FakeEtcd::commits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return commits_;
}

}  // namespace mc::ha

#include "ha/election.h"

namespace mc::ha {

Result<HaKeys> HaKeys::For(const std::string& cluster) {
  if (cluster.empty() || cluster.size() > kMaxClusterNameBytes ||
      cluster.find('/') != std::string::npos) {
    return Error(ErrorCode::INVALID_PARAMS,
                 "HA cluster name '" + cluster + "' must be 1.." +
                     std::to_string(kMaxClusterNameBytes) + " bytes without '/'");
  }
  const std::string base = "mooncake-store/" + cluster + "/";
  return HaKeys{.leader = base + "master_view",
                .log_prefix = base + "ha/log/",
                .snapshot = base + "ha/snapshot",
                .chunk_prefix = base + "ha/chunks/"};
}

Election::Election(EtcdKv& kv, HaKeys keys, std::string value, int64_t ttl_s)
    : kv_(kv), keys_(std::move(keys)), value_(std::move(value)), ttl_s_(ttl_s) {}

Result<std::optional<Term>> Election::TryAcquire() {
  MC_ASSIGN_OR_RETURN(int64_t lease, kv_.LeaseGrant(ttl_s_));
  Txn txn;
  txn.compare.push_back({.target = Compare::Target::kCreate, .key = keys_.leader, .number = 0});
  txn.success.push_back({.kind = TxnOp::Kind::kPut, .key = keys_.leader, .value = value_,
                         .lease = lease});
  txn.success.push_back({.kind = TxnOp::Kind::kRange, .key = keys_.leader});
  auto result = kv_.Commit(txn);
  if (!result.ok() || !result->succeeded || result->ranges.empty() ||
      result->ranges[0].kvs.empty()) {
    (void)kv_.LeaseRevoke(lease);  // best effort: it runs out by itself anyway
    if (!result.ok()) return result.status();
    return std::optional<Term>();
  }
  return std::optional<Term>(
      Term{.lease_id = lease, .revision = result->ranges[0].kvs[0].create_revision});
}

Result<bool> Election::KeepAlive(const Term& term) {
  MC_ASSIGN_OR_RETURN(int64_t ttl, kv_.LeaseKeepAlive(term.lease_id));
  return ttl > 0;
}

Status Election::Resign(const Term& term) { return kv_.LeaseRevoke(term.lease_id); }

Result<std::optional<KeyValue>> Election::Leader() {
  MC_ASSIGN_OR_RETURN(std::vector<KeyValue> kvs, Get(kv_, keys_.leader));
  if (kvs.empty()) return std::optional<KeyValue>();
  return std::optional<KeyValue>(std::move(kvs[0]));
}

}  // namespace mc::ha

// EtcdHttp: EtcdKv over etcd's v3 JSON gateway (POST /v3/kv/txn, ...), with
// cpp-httplib. Given several members' URLs it sends each request to the one
// that last answered and moves on to the next when a member does not answer
// (connect refused, timeout, "no leader"), each member once per request.
//
// Thread-safe, but one request at a time (a mutex): give each thread that
// must not wait behind another (the leader's lease keeper, the log writer)
// its own EtcdHttp.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ha/etcd.h"
#include "ha/gateway_json.h"

namespace mc::ha {

// How long RaftLeaderEndpoint waits for each member to connect and to
// answer (a status reply takes milliseconds).
constexpr uint64_t kRaftLeaderProbeTimeoutUs = 250000;

struct EtcdHttpOptions {
  uint64_t connect_timeout_us = 500000;
  uint64_t request_timeout_us = 2000000;
};

// "http://h1:2379,http://h2:2379" (',' or ';' between members; "http://" may
// be left out; "etcd://h1:2379,h2:2379" as a master address gives the same).
// INVALID_PARAMS on an empty list, https (not supported) or a member
// without a port.
Result<std::vector<std::string>> ParseEtcdEndpoints(std::string_view text);

class EtcdHttp final : public EtcdKv {
 public:
  static Result<std::unique_ptr<EtcdHttp>> Open(std::string_view endpoints,
                                                EtcdHttpOptions options = {});
  ~EtcdHttp() override;

  Result<TxnResult> Commit(const Txn& txn) override;
  Result<RangeResult> Range(const std::string& key, const std::string& range_end,
                            int64_t limit) override;
  Result<int64_t> LeaseGrant(int64_t ttl_s) override;
  Result<int64_t> LeaseKeepAlive(int64_t lease_id) override;
  Status LeaseRevoke(int64_t lease_id) override;
  Status Compact(int64_t revision) override;
  Result<StatusResult> MemberStatus() override;

  const std::vector<std::string>& endpoints() const { return endpoints_; }
  // The index in endpoints() of etcd's raft leader: each member is asked
  // for its status in turn (one that does not answer within
  // kRaftLeaderProbeTimeoutUs is passed over) until one says it leads.
  // UNAVAILABLE_IN_CURRENT_STATUS when none does (an election, or the
  // leader is a member not in our list).
  Result<size_t> RaftLeaderEndpoint();

 private:
  struct Member;
  EtcdHttp(std::vector<std::string> endpoints, EtcdHttpOptions options);
  // POSTs `body` to `path` of the members in turn; the parsed reply.
  Result<Json> Post(const char* path, const std::string& body);

  const std::vector<std::string> endpoints_;
  const EtcdHttpOptions options_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Member>> members_;  // under mu_
  size_t current_ = 0;                            // under mu_
};

}  // namespace mc::ha

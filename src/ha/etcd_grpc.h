// EtcdGrpc: EtcdKv whose txns and ranges go to etcd's gRPC API
// (etcdserverpb.KV/Txn, KV/Range) and everything else (leases, compaction,
// status) to its JSON gateway (an EtcdHttp inside).
//
// Why: the gateway inside etcd turns each JSON request into a gRPC call to
// the member itself (a loopback connection), so a txn costs the member the
// JSON, a second HTTP/2 round and the call proper. Measured with
// scripts/etcd_txn_cost.py (the HA log's txn shape, same etcd, same run):
// gRPC costs etcd about a third less CPU per txn and answers in about half
// the time. The HA log's shippers send one txn per entry, so they use this;
// so do the standby (its reads of the log) and the snapshot writer.
//
// No gRPC library: a gRPC unary call is one HTTP/2 stream (HEADERS, DATA
// with a 5-byte length prefix, trailers), which this file speaks itself over
// one cleartext connection (HTTP/2 "prior knowledge", as etcd serves it on
// its client port): literal HPACK request headers (no table, no Huffman),
// response headers skipped (only a DATA message means success), flow
// control and SETTINGS/PING/GOAWAY handled; protobuf encoded and decoded by
// hand for the few messages used. The static binary stays free of gRPC,
// protobuf and abseil.
//
// Calls go to the member that is etcd's raft leader, asked at the first
// call and every kRaftLeaderCheckUs (over the gateway; a member that does
// not answer is passed over), and otherwise to the first of the list.
//
// A txn with a range op (FencedLog::DropAfter) goes to the gateway, which
// parses range replies. When a gRPC call fails (connection, timeout, a
// trailers-only error reply: the status is in HPACK-coded trailers, not
// read here), Commit returns RPC_FAIL (the caller retries; the txn may
// have landed, as with any unanswered request) and the next call goes to
// the next member; after kGrpcFailuresBeforeGateway failures in a row one
// call goes to the gateway, which tells a refusal (INVALID_PARAMS) from a
// member that cannot serve. Thread-safe, one request at a time.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ha/etcd_http.h"

namespace mc::ha {

constexpr int kGrpcFailuresBeforeGateway = 3;
// How often an EtcdGrpc asks which member is etcd's raft leader (its first
// call asks too): calls go to that member, as a txn sent to a follower is
// forwarded to the leader, its bytes once more over the wire and through
// another member's CPU.
constexpr uint64_t kRaftLeaderCheckUs = 10'000'000;

// The protobuf messages (etcdserverpb.TxnRequest without range ops,
// TxnResponse's header revision and succeeded; RangeRequest, RangeResponse's
// key-values and more), pure functions for tests.
std::string EncodeTxnRequest(const Txn& txn);
// PROTOCOL_ERROR when `bytes` is not a TxnResponse.
Result<TxnResult> DecodeTxnResponse(std::string_view bytes);
std::string EncodeRangeRequest(const std::string& key, const std::string& range_end,
                               int64_t limit);
// PROTOCOL_ERROR when `bytes` is not a RangeResponse.
Result<RangeResult> DecodeRangeResponse(std::string_view bytes);

class EtcdGrpc final : public EtcdKv {
 public:
  static Result<std::unique_ptr<EtcdGrpc>> Open(std::string_view endpoints,
                                                EtcdHttpOptions options = {});
  ~EtcdGrpc() override;

  Result<TxnResult> Commit(const Txn& txn) override;
  Result<RangeResult> Range(const std::string& key, const std::string& range_end,
                            int64_t limit) override;
  Result<int64_t> LeaseGrant(int64_t ttl_s) override { return gateway_->LeaseGrant(ttl_s); }
  Result<int64_t> LeaseKeepAlive(int64_t lease_id) override {
    return gateway_->LeaseKeepAlive(lease_id);
  }
  Status LeaseRevoke(int64_t lease_id) override { return gateway_->LeaseRevoke(lease_id); }
  Status Compact(int64_t revision) override { return gateway_->Compact(revision); }
  Result<StatusResult> MemberStatus() override { return gateway_->MemberStatus(); }

  struct Stats {
    uint64_t grpc_calls = 0;     // txns and ranges answered over gRPC
    uint64_t grpc_failures = 0;
    uint64_t gateway_calls = 0;  // sent to the gateway (txns with range ops, fallback)
  };
  Stats stats() const;

 private:
  struct Conn;
  EtcdGrpc(std::unique_ptr<EtcdHttp> gateway, EtcdHttpOptions options);
  // Whether this call goes to the gateway: `must`, or after
  // kGrpcFailuresBeforeGateway failed gRPC calls in a row (counted).
  bool UseGateway(bool must);
  // One unary gRPC call decoded by `decode`; RPC_FAIL when it fails, and
  // the next call goes to the next member.
  template <typename T>
  Result<T> Unary(std::string_view path, const std::string& message,
                  Result<T> (*decode)(std::string_view));
  // One unary call on the current member: the reply message.
  Result<std::string> Call(std::string_view path, const std::string& message);

  std::unique_ptr<EtcdHttp> gateway_;
  const EtcdHttpOptions options_;
  mutable std::mutex mu_;
  std::unique_ptr<Conn> conn_;  // under mu_; null: connect on the next call
  size_t current_ = 0;          // under mu_
  uint64_t next_leader_check_us_ = 0;  // under mu_
  int failures_in_a_row_ = 0;   // under mu_
  Stats stats_;                 // under mu_
};

}  // namespace mc::ha

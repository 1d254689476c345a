// The part of etcd's v3 KV and lease API that HA needs, as a seam
// (`EtcdKv`): EtcdHttp speaks it to real members through their JSON gateway
// (etcd_http.h); FakeEtcd (fake_etcd.h) is an in-memory etcd for unit tests
// with an injected clock. Keys and values are raw bytes here; the gateway's
// base64 stays inside EtcdHttp.
//
// Why the JSON gateway, and gRPC for the log's txns: the gateway is part of
// every etcd 3.x member (Debian's etcd-server included), it needs only an
// HTTP/1.1 client, which we already link (cpp-httplib), and it keeps the
// static binary free of gRPC, protobuf and abseil (tens of MB, a second TLS
// stack). But the gateway is a JSON-to-gRPC hop inside etcd: a txn through
// it costs etcd more CPU and time than the same txn over gRPC
// (scripts/etcd_txn_cost.py), so the HA log's bytes go as gRPC calls
// (EtcdGrpc, etcd_grpc.h: a minimal HTTP/2 client of our own, no library):
// the shippers' txns, the standby's reads and the snapshot writer's chunks.
// The election and leases go through the gateway.
//
// Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace mc::ha {

struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t lease = 0;
};

// One comparison of a txn: `target` of `key` must equal `number` (create or
// mod revision, lease id) or `value`. A missing key has create revision 0.
struct Compare {
  enum class Target { kCreate, kMod, kLease, kValue };
  Target target = Target::kCreate;
  std::string key;
  int64_t number = 0;
  std::string value;
};

// One operation of a txn. kRange returns keys in [key, range_end) (a single
// key when range_end is empty), at most `limit` (0: all).
struct TxnOp {
  enum class Kind { kPut, kDeleteRange, kRange };
  Kind kind = Kind::kPut;
  std::string key;
  std::string range_end;
  std::string value;  // kPut
  int64_t lease = 0;  // kPut: attach to this lease (0: none)
  int64_t limit = 0;  // kRange
};

struct Txn {
  std::vector<Compare> compare;
  std::vector<TxnOp> success;
  std::vector<TxnOp> failure;
};

struct RangeResult {
  std::vector<KeyValue> kvs;
  bool more = false;
};

struct TxnResult {
  bool succeeded = false;
  int64_t revision = 0;  // the store's revision after the txn
  // One per operation of the branch that ran (empty for puts and deletes).
  std::vector<RangeResult> ranges;
};

struct StatusResult {
  int64_t db_size_bytes = 0;
  int64_t db_size_in_use_bytes = 0;
  int64_t revision = 0;
};

// The end of the range of every key that starts with `prefix`.
std::string PrefixEnd(const std::string& prefix);

class EtcdKv {
 public:
  virtual ~EtcdKv() = default;
  // Errors: RPC_FAIL / RPC_TIMEOUT when no member answered, INVALID_PARAMS
  // when etcd refused the request (too large, too many ops, ...).
  virtual Result<TxnResult> Commit(const Txn& txn) = 0;
  virtual Result<RangeResult> Range(const std::string& key, const std::string& range_end,
                                    int64_t limit) = 0;
  virtual Result<int64_t> LeaseGrant(int64_t ttl_s) = 0;  // the lease id
  // The lease's remaining TTL in seconds; 0 when it has expired.
  virtual Result<int64_t> LeaseKeepAlive(int64_t lease_id) = 0;
  virtual Status LeaseRevoke(int64_t lease_id) = 0;
  // Drops the history before `revision` (etcd keeps every old version until
  // compacted), so a trimmed log really frees space.
  virtual Status Compact(int64_t revision) = 0;
  virtual Result<StatusResult> MemberStatus() = 0;
};

// Convenience forms over Commit/Range.
Status Put(EtcdKv& kv, const std::string& key, const std::string& value, int64_t lease = 0);
Result<std::vector<KeyValue>> Get(EtcdKv& kv, const std::string& key);  // 0 or 1 kvs

}  // namespace mc::ha

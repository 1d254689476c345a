// Leader election on an etcd lease, and the keys a cluster's HA uses.
//
// The leader key ("mooncake-store/<cluster>/master_view", the reference's,
// so its clients find our leader too) holds the leader's RPC address and is
// attached to the leader's lease: it disappears when the lease is revoked or
// runs out, and whoever creates it next leads. The key's create revision is
// the leader's term: it grows with every new leader, and every write the
// leader makes (ha::FencedLog) compares it, so once the key is gone or
// someone else's, a deposed leader's late write is refused by etcd itself.
//
// LeaseClock keeps the leader's own view of its lease: a keepalive sent at
// t renews the lease at etcd no earlier than t, so the lease is held at
// least until t + ttl on etcd's side. The leader stops acknowledging at
// `deadline` (the last successful keepalive's send time + ttl - margin),
// before any other master can have won the key.
//
// Not thread-safe: one thread campaigns and keeps the lease.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"
#include "ha/etcd.h"

namespace mc::ha {

// The reference's cluster name when none is given (MC_STORE_CLUSTER_ID).
constexpr const char* kDefaultClusterName = "mooncake_cluster";
// Longest cluster name: it is part of every key.
constexpr size_t kMaxClusterNameBytes = 128;

struct HaKeys {
  std::string leader;         // mooncake-store/<cluster>/master_view
  std::string log_prefix;     // .../ha/log/<20-digit entry number>
  std::string snapshot;       // .../ha/snapshot: "<entry> <id> <chunks> <bytes>"
  std::string chunk_prefix;   // .../ha/chunks/<id>/<6-digit chunk>
  // INVALID_PARAMS for an empty or too long name, or one with '/'.
  static Result<HaKeys> For(const std::string& cluster);
};

struct Term {
  int64_t lease_id = 0;
  int64_t revision = 0;  // the leader key's create revision
};

class Election {
 public:
  // `value`: what the leader key holds while this node leads (its RPC
  // address, host:port).
  Election(EtcdKv& kv, HaKeys keys, std::string value, int64_t ttl_s);

  // One attempt: a lease, then the key if nobody holds it. The term when
  // this node now leads, nullopt when another does (lease revoked again).
  Result<std::optional<Term>> TryAcquire();
  // True while the lease lives (the key is then still ours: nobody deletes it).
  Result<bool> KeepAlive(const Term& term);
  // Gives the key up at once (lease revoked), so a standby need not wait
  // for the TTL.
  Status Resign(const Term& term);
  // The current leader key, if any.
  Result<std::optional<KeyValue>> Leader();

  const HaKeys& keys() const { return keys_; }
  int64_t ttl_s() const { return ttl_s_; }

 private:
  EtcdKv& kv_;
  const HaKeys keys_;
  const std::string value_;
  const int64_t ttl_s_;
};

// The leader's own deadline for its lease (see the top of this file).
class LeaseClock {
 public:
  LeaseClock(uint64_t ttl_us, uint64_t margin_us) : ttl_us_(ttl_us), margin_us_(margin_us) {}
  // A keepalive (or the grant) sent at `sent_us` succeeded.
  void Renewed(uint64_t sent_us) { deadline_us_ = sent_us + ttl_us_ - margin_us_; }
  bool Valid(uint64_t now_us) const { return now_us < deadline_us_; }
  uint64_t deadline_us() const { return deadline_us_; }

 private:
  const uint64_t ttl_us_;
  const uint64_t margin_us_;
  uint64_t deadline_us_ = 0;
};

}  // namespace mc::ha

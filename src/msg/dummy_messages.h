// The requests and replies between a dummy client (an engine rank, in
// `client`) and the standalone client `mooncake client` (`clientd`) on the
// host's Unix socket (mooncake-client(1)). Object bytes never travel in them:
// they name ranges of the dummy's shared pool (a memfd the standalone client
// created and passed at attach), which both processes map. Plain values with
// Fields() lists, coded by proto/codec.h like the master's messages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/ceilings.h"
#include "msg/messages.h"

namespace mc::msg {

// Version of the dummy protocol; an attach with another is refused.
inline constexpr uint32_t kDummyProtocolVersion = 1;
// Parts one object may be gathered from / scattered to.
inline constexpr size_t kMaxDummyPartsPerObject = 4096;

// Bytes [offset, offset + size_bytes) of the dummy's pool.
struct PoolRange {
  uint64_t offset = 0;
  uint64_t size_bytes = 0;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.offset, "range.offset");
    f(s.size_bytes, "range.size_bytes");
  }
};
// One object: the concatenation of its parts.
struct PoolParts {
  std::vector<PoolRange> parts;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.parts, "parts count", kMaxDummyPartsPerObject, "part");
  }
};

// The first message on a connection: the pool the dummy wants. The reply
// carries the pool's memfd (SCM_RIGHTS) and the standalone client's identity.
struct DummyAttachRequest {
  uint32_t version = kDummyProtocolVersion;
  uint64_t pool_size_bytes = 0;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.version, "version");
    f(s.pool_size_bytes, "pool_size_bytes");
  }
};
struct DummyAttachReply {
  uint64_t pool_size_bytes = 0;
  ClientId client;       // the standalone client's id at the master
  std::string hostname;  // its segment's name (get_hostname)
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.pool_size_bytes, "pool_size_bytes");
    f(s.client, "client");
    f(s.hostname, "hostname");
  }
};

// A put of keys[i] from objects[i] (all of it in the pool).
struct DummyPutRequest {
  std::vector<std::string> keys;
  std::vector<PoolParts> objects;
  PutOptions options;
  PutPlacement placement;
  bool upsert = false;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.keys, "keys count", kMaxBatchItems, "key");
    f(s.objects, "objects count", kMaxBatchItems, "object");
    f(s.options, "options");
    f(s.placement, "placement");
    f(s.upsert, "upsert");
  }
};
// A get of keys[i] into objects[i].
struct DummyGetRequest {
  std::vector<std::string> keys;
  std::vector<PoolParts> objects;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.keys, "keys count", kMaxBatchItems, "key");
    f(s.objects, "objects count", kMaxBatchItems, "object");
  }
};
// Exists, Remove, Size, Locate (one key).
struct DummyKeysRequest {
  std::vector<std::string> keys;
  bool force = false;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.keys, "keys count", kMaxBatchItems, "key");
    f(s.force, "force");
  }
};
struct DummyU64 {
  uint64_t value = 0;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) { f(s.value, "value"); }
};
// The standalone client's transfer paths (Client::path_counts).
struct DummyPathCounts {
  uint64_t same_host = 0, rdma = 0, tcp = 0, tcp_fallback = 0;
  std::string last_path;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.same_host, "same_host");
    f(s.rdma, "rdma");
    f(s.tcp, "tcp");
    f(s.tcp_fallback, "tcp_fallback");
    f(s.last_path, "last_path");
  }
};

// Where key `index` of a DummyGetIntoLearn lives, for the dummy's own direct
// reads (client/direct_reads.h) out of a same-host segment: the standalone
// client's cached entry, and `forget_mark`, the value of the key's slot in
// the forget table (DummyForgetTable) read before the entry was.
struct DummyLocation {
  uint32_t index = 0;
  uint64_t generation = 0;
  uint64_t size_bytes = 0;
  std::string shm_path;
  std::string store;
  uint64_t offset = 0;
  uint64_t grant_offset = 0;
  uint64_t grant_size_bytes = 0;
  uint64_t grant_expiry_unix_ms = 0;
  std::string grant_signature;
  uint64_t seal = 0;
  uint64_t expiry_unix_ms = 0;
  uint64_t forget_mark = 0;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.index, "location.index");
    f(s.generation, "location.generation");
    f(s.size_bytes, "location.size_bytes");
    f(s.shm_path, "location.shm_path");
    f(s.store, "location.store");
    f(s.offset, "location.offset");
    f(s.grant_offset, "location.grant_offset");
    f(s.grant_size_bytes, "location.grant_size_bytes");
    f(s.grant_expiry_unix_ms, "location.grant_expiry_unix_ms");
    f(s.grant_signature, "location.grant_signature");
    f(s.seal, "location.seal");
    f(s.expiry_unix_ms, "location.expiry_unix_ms");
    f(s.forget_mark, "location.forget_mark");
  }
};
// DummyGetIntoLearn: what DummyGetInto answers, and the locations the dummy
// may read directly next time.
struct DummyGetLearnReply {
  Batch<BatchItem<DummyU64>> sizes;
  std::vector<DummyLocation> locations;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.sizes, "sizes count", kMaxBatchItems, "size");
    f(s.locations, "locations count", kMaxBatchItems, "location");
  }
};
// Direct-read hits of a dummy, for the standalone client to report to the
// master with its own (eviction sees them).
struct DummyAccessReport {
  std::vector<KeyAccess> accesses;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) { f(s.accesses, "accesses count", kMaxBatchItems, "access"); }
};

// DummyDirectPuts: the dummy's put journal rides with the request
// (client/dummy_journal.h); the reply is what the dummy needs to put by
// itself: the master's address, the cluster's token, the RPC and transfer
// limits and the TLS files of the standalone client's own configuration.
struct DummyDirectPutsReply {
  std::string master;
  std::string local_hostname;
  std::string auth_token;
  bool shm = true;
  uint64_t rpc_timeout_us = 0;
  uint32_t rpc_retries = 0;
  uint32_t tcp_streams = 0;
  uint64_t transfer_timeout_us = 0;
  std::string tls_cert, tls_key, tls_ca, tls_min_version;
  bool tls_verify_peer = false;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.master, "master");
    f(s.local_hostname, "local_hostname");
    f(s.auth_token, "auth_token");
    f(s.shm, "shm");
    f(s.rpc_timeout_us, "rpc_timeout_us");
    f(s.rpc_retries, "rpc_retries");
    f(s.tcp_streams, "tcp_streams");
    f(s.transfer_timeout_us, "transfer_timeout_us");
    f(s.tls_cert, "tls_cert");
    f(s.tls_key, "tls_key");
    f(s.tls_ca, "tls_ca");
    f(s.tls_min_version, "tls_min_version");
    f(s.tls_verify_peer, "tls_verify_peer");
  }
};

}  // namespace mc::msg

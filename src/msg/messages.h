// The master's operations as plain request/response structs.
//
// These are the vocabulary shared by the master's state machine
// (src/master), the RPC layer that encodes them on the wire (src/proto,
// src/rpc, specified in mooncake-protocol(7)) and the client library. A
// module of its own, so the core speaks it without depending on the codec. They
// carry no behaviour. Plain values: copy freely, not synchronized.
//
// Each struct lists its fields once, in wire order, in a static Fields(s, f)
// that calls f(field, name) for every field: f(vector, name, max_items) for
// a vector (at most max_items decode), a struct field visits that struct.
// proto/codec.h runs one visitor that writes and one that reads, so the two
// directions cannot disagree; `name` is what a decode error reports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/ceilings.h"
#include "common/result.h"

namespace mc::msg {

// A client (store or pure client) process: random 128 bits chosen at start.
struct ClientId {
  uint64_t hi = 0;
  uint64_t lo = 0;
  bool operator==(const ClientId&) const = default;
  bool operator<(const ClientId& o) const { return hi != o.hi ? hi < o.hi : lo < o.lo; }
  std::string ToString() const;  // 32 hex digits
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.hi, "client.hi");
    f(s.lo, "client.lo");
  }
};

// Memory a store contributes to the pool.
struct SegmentDesc {
  std::string name;          // unique in the cluster, e.g. "host:dataport"
  std::string hostname;      // the store's host, for same-host detection
  std::string endpoint;      // "ip:port" of the store's TCP data server
  std::string shm_path;      // file a same-host client maps; empty if none
  uint64_t size_bytes = 0;
  // Changes whenever the store's memory is new (store process restarted), so
  // the master never serves bytes a previous incarnation held.
  uint64_t incarnation = 0;
  // Random secret the store generated for this incarnation. The master signs
  // every buffer it hands out with it (BufferDesc::capability), and the store
  // serves a transfer only with a valid, unexpired capability.
  std::string access_key;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.name, "segment.name");
    f(s.hostname, "segment.hostname");
    f(s.endpoint, "segment.endpoint");
    f(s.shm_path, "segment.shm_path");
    f(s.size_bytes, "segment.size_bytes");
    f(s.incarnation, "segment.incarnation");
    f(s.access_key, "segment.access_key");
  }
};

// One contiguous piece of a replica inside one segment.
struct BufferDesc {
  std::string segment_name;
  std::string endpoint;      // copied from the segment, so gets need no lookup
  std::string shm_path;
  std::string hostname;
  uint64_t offset = 0;       // byte offset inside the segment
  uint64_t size_bytes = 0;
  // HMAC-SHA256 by the segment's access_key over (op, incarnation, offset,
  // size, expiry): what lets the store refuse writes outside in-progress puts
  // and reads of anything but complete, leased replicas. Filled by the master
  // service, not by the state machine.
  std::string capability;
  uint64_t capability_expiry_unix_ms = 0;
  // Reads only: a sealed-read grant (CapabilityOp::kReadSealed) for direct
  // reads that skip the master. It outlives the lease because the store
  // serves it only on a sealed read naming a seal (transfer/write_epochs.h).
  std::string sealed_capability;
  uint64_t sealed_capability_expiry_unix_ms = 0;
  // The signing master's term (its HA leadership, 0 without HA), signed in
  // both capabilities: a store that saw a newer term refuses this one's.
  uint64_t capability_term = 0;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.segment_name, "buffer.segment_name");
    f(s.endpoint, "buffer.endpoint");
    f(s.shm_path, "buffer.shm_path");
    f(s.hostname, "buffer.hostname");
    f(s.offset, "buffer.offset");
    f(s.size_bytes, "buffer.size_bytes");
    f(s.capability, "buffer.capability");
    f(s.capability_expiry_unix_ms, "buffer.capability_expiry_unix_ms");
    f(s.sealed_capability, "buffer.sealed_capability");
    f(s.sealed_capability_expiry_unix_ms, "buffer.sealed_capability_expiry_unix_ms");
    f(s.capability_term, "buffer.capability_term");
  }
};

enum class ReplicaStatus : uint8_t { kProcessing = 1, kComplete = 2 };

// A replica: its buffers in object order (several when striped).
struct ReplicaDesc {
  ReplicaStatus status = ReplicaStatus::kProcessing;
  std::vector<BufferDesc> buffers;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.status, "replica.status");  // a value not listed above fails to decode
    f(s.buffers, "replica.buffers count", kMaxBuffersPerReplica);
  }
};

// Where a put should go and how long it stays, beyond PutOptions' replicas
// and soft pin (an inference engine keeping its KV blocks on its own
// segment). Travels only in BatchPutStartEx: PutStart's payload never
// changes (mooncake-protocol(7), VERSIONING). Each wish falls back to normal
// placement when it cannot be met (a preferred segment full or gone).
struct PutPlacement {
  std::vector<std::string> preferred_segments;  // replica r first tries [r]
  std::string preferred_host;  // then segments whose store runs on this host
  uint64_t soft_pin_ttl_ms = 0;  // with soft_pin; 0: the master's default TTL
  bool hard_pin = false;         // never evicted (kept while the master runs)
  bool empty() const {
    return preferred_segments.empty() && preferred_host.empty() && soft_pin_ttl_ms == 0 &&
           !hard_pin;
  }
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.preferred_segments, "placement.preferred_segments count", kMaxWireReplicas,
      "placement.preferred_segment");
    f(s.preferred_host, "placement.preferred_host");
    f(s.soft_pin_ttl_ms, "placement.soft_pin_ttl_ms");
    f(s.hard_pin, "placement.hard_pin");
  }
};

struct PutOptions {
  uint32_t replicas = 1;
  bool soft_pin = false;
  PutPlacement placement;  // not part of PutOptions' own encoding
  // Not on the wire: the client starts the put with BatchUpsertStart, which
  // replaces an existing object instead of refusing it.
  bool upsert = false;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.replicas, "options.replicas");
    f(s.soft_pin, "options.soft_pin");
  }
};

// ---- requests and replies -------------------------------------------------

struct MountSegmentRequest {
  ClientId client;
  SegmentDesc segment;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.client, "client");
    f(s.segment, "segment");
  }
};
struct UnmountSegmentRequest {
  ClientId client;
  std::string segment_name;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.client, "client");
    f(s.segment_name, "segment_name");
  }
};

struct PingRequest {
  ClientId client;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) { f(s.client, "client"); }
};
struct PingReply {
  bool remount = false;      // the master does not know this client: remount
  uint64_t view_version = 0; // changes when segments come or go
  // The term the master signs grants with (its HA leadership; 0 without
  // HA): the store refuses grants of older terms from then on.
  uint64_t term = 0;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.remount, "remount");
    f(s.view_version, "view_version");
    f(s.term, "term");
  }
};

struct PutStartRequest {
  ClientId client;
  std::string key;
  uint64_t size_bytes = 0;
  PutOptions options;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.client, "client");
    f(s.key, "key");
    f(s.size_bytes, "size_bytes");
    f(s.options, "options");
  }
};
struct PutStartReply {
  std::vector<ReplicaDesc> replicas;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) { f(s.replicas, "replicas count", kMaxWireReplicas); }
};
// PutStartRequest with its options.placement on the wire (BatchPutStartEx).
struct PutStartExRequest {
  PutStartRequest start;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.start, "start");
    f(s.start.options.placement, "placement");
  }
};

struct KeyRequest {  // PutEnd, PutRevoke, Exist
  ClientId client;
  std::string key;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.client, "client");
    f(s.key, "key");
  }
};

struct GetReplicaListReply {
  std::vector<ReplicaDesc> replicas;  // complete replicas only
  uint64_t size_bytes = 0;
  uint64_t lease_ttl_us = 0;          // reads are safe until the lease expires
  // The version's generation: another upsert, or a removal and a new put,
  // gives the key another (a client's direct-read cache keys on it).
  uint64_t generation = 0;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.replicas, "replicas count", kMaxWireReplicas);
    f(s.size_bytes, "size_bytes");
    f(s.lease_ttl_us, "lease_ttl_us");
    f(s.generation, "generation");
  }
};

// ReportTransfers (a notification): what one client moved since its last
// report, per data path and direction. One-sided RDMA never runs store code,
// so the client that moved the bytes is the one that can count them.
enum class TransferPath : uint8_t { kTcp = 0, kRdma = 1, kShm = 2 };
enum class TransferDir : uint8_t { kPut = 0, kGet = 1 };
inline constexpr size_t kTransferPaths = 3;
inline constexpr size_t kTransferDirs = 2;
struct TransferCount {
  uint8_t path = 0;  // TransferPath; the master ignores a value it does not know
  uint8_t dir = 0;   // TransferDir
  uint64_t ops = 0;
  uint64_t bytes = 0;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.path, "transfer.path");
    f(s.dir, "transfer.dir");
    f(s.ops, "transfer.ops");
    f(s.bytes, "transfer.bytes");
  }
};
// Rows of one report: one per (path, dir), with room for paths to come.
inline constexpr size_t kMaxTransferCounts = 16;
struct TransferReport {
  ClientId client;
  std::vector<TransferCount> counts;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.client, "client");
    f(s.counts, "transfer counts count", kMaxTransferCounts);
  }
};

// ReportAccesses (a notification): reads a client served from its direct-read
// cache without asking the master, so eviction still sees those hits.
struct KeyAccess {
  std::string key;
  uint32_t count = 0;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.key, "access.key");
    f(s.count, "access.count");
  }
};
struct AccessReport {
  ClientId client;
  std::vector<KeyAccess> accesses;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.client, "client");
    f(s.accesses, "accesses count", kMaxBatchItems);
  }
};

struct RemoveRequest {
  std::string key;
  bool force = false;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.key, "key");
    f(s.force, "force");
  }
};
// RemoveAllEx's payload: with force, leased objects go too (objects still
// being written never do: their writer holds the buffers).
struct RemoveAllRequest {
  bool force = false;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) { f(s.force, "force"); }
};
struct RemoveAllReply {
  uint64_t removed = 0;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) { f(s.removed, "removed"); }
};

struct ListKeysRequest {
  std::string prefix;
  uint32_t limit = 1000;
  std::string cursor;        // "" for the first page; the reply's next_cursor after
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.prefix, "prefix");
    f(s.limit, "limit");
    f(s.cursor, "cursor");
  }
};
struct KeyInfo {
  std::string key;
  uint64_t size_bytes = 0;
  uint32_t replicas = 0;
  bool soft_pinned = false;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.key, "key");
    f(s.size_bytes, "size_bytes");
    f(s.replicas, "replicas");
    f(s.soft_pinned, "soft_pinned");
  }
};
struct ListKeysReply {
  std::vector<KeyInfo> keys;
  std::string next_cursor;   // "" when there is nothing more
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.keys, "keys count", kMaxBatchItems);
    f(s.next_cursor, "next_cursor");
  }
};

struct SegmentStatus {
  std::string name;
  std::string endpoint;
  uint64_t size_bytes = 0;
  uint64_t used_bytes = 0;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.name, "segment.name");
    f(s.endpoint, "segment.endpoint");
    f(s.size_bytes, "segment.size_bytes");
    f(s.used_bytes, "segment.used_bytes");
  }
};
struct ClusterStatusReply {
  uint64_t capacity_bytes = 0;
  uint64_t used_bytes = 0;
  uint64_t key_count = 0;
  uint64_t soft_pinned_count = 0;
  uint64_t active_clients = 0;
  std::vector<SegmentStatus> segments;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.capacity_bytes, "capacity_bytes");
    f(s.used_bytes, "used_bytes");
    f(s.key_count, "key_count");
    f(s.soft_pinned_count, "soft_pinned_count");
    f(s.active_clients, "active_clients");
    f(s.segments, "segments count", kMaxListedSegments);
  }
};

// Batches: one Status per element, in request order. A batch is refused
// whole only when it is malformed (e.g. longer than the limit).
template <typename T>
struct BatchItem {
  Status status;
  T value{};
};

// A batch request or reply: its elements in order.
template <typename T>
using Batch = std::vector<T>;

}  // namespace mc::msg

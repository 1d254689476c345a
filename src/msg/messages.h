// The master's operations as plain request/response structs.
//
// These are the vocabulary shared by the master's state machine
// (src/master), the RPC layer that encodes them on the wire (src/proto,
// src/rpc, specified in mooncake-protocol(7)) and the client library. A
// module of its own, so the core speaks it without depending on the codec. They
// carry no behaviour. Plain values: copy freely, not synchronized.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace mc::msg {

// A client (store or pure client) process: random 128 bits chosen at start.
struct ClientId {
  uint64_t hi = 0;
  uint64_t lo = 0;
  bool operator==(const ClientId&) const = default;
  bool operator<(const ClientId& o) const { return hi != o.hi ? hi < o.hi : lo < o.lo; }
  std::string ToString() const;  // 32 hex digits
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
};

enum class ReplicaStatus : uint8_t { kProcessing = 1, kComplete = 2 };

// A replica: its buffers in object order (several when striped).
struct ReplicaDesc {
  ReplicaStatus status = ReplicaStatus::kProcessing;
  std::vector<BufferDesc> buffers;
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
};

struct PutOptions {
  uint32_t replicas = 1;
  bool soft_pin = false;
  PutPlacement placement;  // not part of PutOptions' own encoding
  // Not on the wire: the client starts the put with BatchUpsertStart, which
  // replaces an existing object instead of refusing it.
  bool upsert = false;
};

// ---- requests and replies -------------------------------------------------

struct MountSegmentRequest { ClientId client; SegmentDesc segment; };
struct UnmountSegmentRequest { ClientId client; std::string segment_name; };

struct PingRequest { ClientId client; };
struct PingReply {
  bool remount = false;      // the master does not know this client: remount
  uint64_t view_version = 0; // changes when segments come or go
};

struct PutStartRequest { ClientId client; std::string key; uint64_t size_bytes = 0; PutOptions options; };
struct PutStartReply { std::vector<ReplicaDesc> replicas; };
// PutStartRequest with its options.placement on the wire (BatchPutStartEx).
struct PutStartExRequest { PutStartRequest start; };

struct KeyRequest { ClientId client; std::string key; };  // PutEnd, PutRevoke, Exist

struct GetReplicaListReply {
  std::vector<ReplicaDesc> replicas;  // complete replicas only
  uint64_t size_bytes = 0;
  uint64_t lease_ttl_us = 0;          // reads are safe until the lease expires
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
};
// Rows of one report: one per (path, dir), with room for paths to come.
inline constexpr size_t kMaxTransferCounts = 16;
struct TransferReport { ClientId client; std::vector<TransferCount> counts; };

struct RemoveRequest { std::string key; bool force = false; };
// RemoveAllEx's payload: with force, leased objects go too (objects still
// being written never do: their writer holds the buffers).
struct RemoveAllRequest { bool force = false; };
struct RemoveAllReply { uint64_t removed = 0; };

struct ListKeysRequest {
  std::string prefix;
  uint32_t limit = 1000;
  std::string cursor;        // "" for the first page; the reply's next_cursor after
};
struct KeyInfo { std::string key; uint64_t size_bytes = 0; uint32_t replicas = 0; bool soft_pinned = false; };
struct ListKeysReply {
  std::vector<KeyInfo> keys;
  std::string next_cursor;   // "" when there is nothing more
};

struct SegmentStatus { std::string name; std::string endpoint; uint64_t size_bytes = 0; uint64_t used_bytes = 0; };
struct ClusterStatusReply {
  uint64_t capacity_bytes = 0;
  uint64_t used_bytes = 0;
  uint64_t key_count = 0;
  uint64_t soft_pinned_count = 0;
  uint64_t active_clients = 0;
  std::vector<SegmentStatus> segments;
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

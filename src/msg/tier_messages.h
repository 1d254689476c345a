// The disk tier's operations between a store and the master (issue 31):
// a store announces the objects its disk tier holds when it mounts
// (TierAnnounce), then asks for the work the master queues for it and
// reports what it did (TierPoll, which the master answers when there is
// work; TierFetch, its older form, answers at once). Same rules as messages.h: vocabulary only.
// Plain values, not synchronized.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "msg/messages.h"

namespace mc::msg {

// Objects one TierAnnounce carries; a store with more sends several.
inline constexpr uint32_t kMaxTierAnnounceObjects = 4096;
// Work items one TierFetch reply carries, and results one request reports.
inline constexpr uint32_t kMaxTierWorkItems = 256;

// A reader's GetReplicaList of an object the master is copying from a disk
// tier into memory fails with REPLICA_IS_NOT_READY and a message starting
// with this, which clients take as "ask again shortly" (an in-flight put's
// REPLICA_IS_NOT_READY is not retried).
inline constexpr const char* kStagingFromDisk = "staging from disk";

struct DiskObject {
  std::string key;
  uint64_t size_bytes = 0;
  uint64_t generation = 0;  // the tier's file generation
  bool operator==(const DiskObject&) const = default;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.key, "object.key");
    f(s.size_bytes, "object.size_bytes");
    f(s.generation, "object.generation");
  }
};

// A store's disk tier: `disk_id` names it across restarts of the store
// (host identity and path), `segment_name` is where the store is mounted
// now. `first`: the announce of a (re)mount starts; `last`: it is complete,
// and disk replicas the master recorded for this disk that were not
// announced are forgotten.
struct TierAnnounceRequest {
  ClientId client;
  std::string segment_name;
  std::string disk_id;
  uint64_t capacity_bytes = 0;
  bool first = true;
  bool last = true;
  std::vector<DiskObject> objects;
  bool operator==(const TierAnnounceRequest&) const = default;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.client, "client");
    f(s.segment_name, "segment_name");
    f(s.disk_id, "disk_id");
    f(s.capacity_bytes, "capacity_bytes");
    f(s.first, "first");
    f(s.last, "last");
    f(s.objects, "objects count", kMaxTierAnnounceObjects);
  }
};
// The announced keys the master has no durable record of (removed, or
// replaced, while the store was away): the store deletes them.
struct TierAnnounceReply {
  std::vector<std::string> drop_keys;
  bool operator==(const TierAnnounceReply&) const = default;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.drop_keys, "drop_keys count", kMaxTierAnnounceObjects, "drop_key");
  }
};

enum class TierWorkKind : uint8_t {
  kOffload = 0,  // write [offset, offset+size) of the segment to the disk under key
  kStage = 1,    // read key from disk into [offset, offset+size) of the segment
  kDelete = 2,   // delete key from disk
};

struct TierWork {
  uint64_t ticket = 0;  // the master's, echoed in the result
  uint8_t kind = 0;     // a TierWorkKind
  std::string key;
  uint64_t offset = 0;
  uint64_t size_bytes = 0;
  bool operator==(const TierWork&) const = default;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.ticket, "work.ticket");
    f(s.kind, "work.kind");
    f(s.key, "work.key");
    f(s.offset, "work.offset");
    f(s.size_bytes, "work.size_bytes");
  }
};

struct TierResult {
  uint64_t ticket = 0;
  Status status;  // CHECKSUM_MISMATCH, FILE_WRITE_FAIL, NO_AVAILABLE_HANDLE, ...
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.ticket, "result.ticket");
    f(s.status, "result.status");
  }
};

// The store's disk-tier worker: results of the work it did since its last
// fetch, and its tier's fill. The reply: work queued for this store (empty
// when there is none; `wait_ms` says how long to wait before asking again
// unless the store has results to report).
struct TierFetchRequest {
  ClientId client;
  std::string segment_name;
  uint64_t used_bytes = 0;
  uint64_t capacity_bytes = 0;
  std::vector<TierResult> results;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.client, "client");
    f(s.segment_name, "segment_name");
    f(s.used_bytes, "used_bytes");
    f(s.capacity_bytes, "capacity_bytes");
    f(s.results, "results count", kMaxTierWorkItems);
  }
};
// TierFetch that waits: when it reports no results and no work is queued
// for the store, the master holds the reply until work is queued for it,
// its segment goes, or max_wait_ms (at most kMaxTierPollWaitMs) passed, and
// then answers (no work, wait_ms 0). The store's worker asks again at once,
// so work reaches it the moment it is queued and an idle master hears from
// it once per max_wait_ms. max_wait_ms must stay below the caller's RPC
// timeout; 0 answers at once, as TierFetch.
inline constexpr uint32_t kMaxTierPollWaitMs = 10000;
struct TierPollRequest {
  TierFetchRequest fetch;
  uint32_t max_wait_ms = 0;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.fetch, "fetch");
    f(s.max_wait_ms, "max_wait_ms");
  }
};
struct TierFetchReply {
  std::vector<TierWork> work;
  uint32_t wait_ms = 0;
  bool operator==(const TierFetchReply&) const = default;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.work, "work count", kMaxTierWorkItems);
    f(s.wait_ms, "wait_ms");
  }
};

// Where a listed key's bytes are (ListKeysTiered).
enum class KeyTier : uint8_t {
  kMemory = 0,
  kDisk = 1,  // on a store's disk tier only (a get stages it back into memory)
  kBoth = 2,
};

// ListKeys with each key's tier: `list` as ListKeys answers it (keys on
// disk only included, with replicas 0), `tiers` one KeyTier per key.
struct TieredListKeysReply {
  ListKeysReply list;
  std::vector<uint8_t> tiers;
  template <typename S, typename F>
  static void Fields(S& s, F&& f) {
    f(s.list, "list");
    f(s.tiers, "tiers count", kMaxBatchItems, "tier");
  }
};

}  // namespace mc::msg

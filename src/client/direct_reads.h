// DirectReads: a client's cache of where keys live, for gets that skip the
// master (issue 33, "one round trip for a repeated get").
//
// After a get through the master, the client remembers the replica it read
// (one buffer: its store, offset, size, the master's sealed-read grant) with
// the seal the transport proved the bytes by (transfer/write_epochs.h) and
// the version's generation. The next get of the key within `ttl_us` reads
// straight from the store with a sealed read naming that seal: the store (or,
// same-host, the client itself) serves the bytes only if no write touched
// them since, else REPLICA_IS_GONE, and the get asks the master as before.
// So a direct read returns the bytes of the version it cached or nothing.
// A version removed, replaced or evicted by the master is retired on its
// store before the master answers (masterd/retirer.h: the range counts as
// written and takes no new seal until written again), so a direct read that
// starts after that answer asks the master; the TTL bounds only what the
// master could not retire (a store it could not reach). This client's own puts and
// removals forget their keys at once.
//
// Hits are counted per key and reach the master in batches (ReportAccesses),
// so eviction still sees them. Thread-safe (one mutex).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "msg/messages.h"
#include "transfer/transport.h"

namespace mc::client {

class DirectReads {
 public:
  // Keys remembered at most; past it a new key displaces an old one.
  static constexpr size_t kMaxEntries = 1 << 16;
  // Keys with hits waiting to be reported at most; past it a report is due.
  static constexpr size_t kMaxPendingAccessKeys = 4096;
  // Objects larger than this are not cached: one sealed read is one copy,
  // staged whole on the store.
  static constexpr uint64_t kMaxObjectBytes = 4ull << 20;

  struct Entry {
    uint64_t generation = 0;
    uint64_t size_bytes = 0;
    transfer::Endpoint endpoint;  // shm_path set only when same-host reads are allowed
    std::string store;            // "host:port", as the master names it
    uint64_t offset = 0;
    transfer::Grant grant;  // the sealed-read grant
    uint64_t seal = 0;
    uint64_t expiry_unix_ms = 0;  // used until then
    uint64_t forget_mark = 0;     // a dummy's (client/dummy_forgets.h); unused here
  };

  explicit DirectReads(uint64_t ttl_us) : ttl_us_(ttl_us) {}
  bool enabled() const { return ttl_us_ > 0; }

  // Counts Forget and Clear calls: a read through the master that began
  // before one (this client's own put or removal) must not be learnt after
  // it, or it would bring the old version back.
  uint64_t forgets() const { return forgets_.load(); }

  // The key's entry unless absent or expired by `now_unix_ms`.
  std::optional<Entry> Lookup(const std::string& key, uint64_t now_unix_ms);
  // Remembers what a get through the master read: `buffer` of `reply`'s
  // version, proved by `seal` (0: not provable, nothing is remembered).
  void Learn(const std::string& key, const msg::GetReplicaListReply& reply,
             const msg::BufferDesc& buffer, const transfer::Endpoint& endpoint, uint64_t seal,
             uint64_t now_unix_ms, uint64_t forgets_before);
  // Remembers `entry` as it is (a dummy's copy of its standalone client's).
  void Install(const std::string& key, Entry entry);
  void Forget(const std::string& key);
  void Clear();

  // A hit served without the master.
  void CountHit(const std::string& key, uint32_t n = 1);
  // The hits since the last call, to report; empty when none.
  std::vector<msg::KeyAccess> TakeAccesses();
  bool report_due() const;

  size_t size() const;

 private:
  void InsertLocked(const std::string& key, Entry e);

  const uint64_t ttl_us_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  std::unordered_map<std::string, uint32_t> hits_;
  std::atomic<uint64_t> forgets_{0};
};

}  // namespace mc::client

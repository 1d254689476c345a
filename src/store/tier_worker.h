// TierWorker: a store's side of the master's disk-tier work (issue 31).
//
// Once the segment is mounted, announces what the disk tier holds (the
// tier's index, read from its files' headers at start) and deletes what the
// master has no record of; then asks for the work the master queues for
// this store (TierPoll), runs it against its own segment and tier (offload:
// segment bytes to a file; stage: a file into segment bytes, verified
// against its checksum; delete) and reports the results in its next call.
// The master holds a call that finds no work until work is queued (up to
// `poll_wait_ms`), so work arrives when it is queued and an idle store
// sends one call per poll_wait_ms: no heartbeat, no polling of an idle
// master, and the bytes never cross the network. A held call keeps one
// connection of the link's pool.
//
// Thread-safe: one thread of its own; Reannounce() and Stop() from any.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "msg/tier_messages.h"

namespace mc::rpc {
class MasterClient;
}
namespace mc::tier {
class DiskTier;
}
namespace mc::transfer {
class Segment;
}

namespace mc::store {

class TierWorker {
 public:
  // After a failed announce or pull, the worker waits this long.
  static constexpr uint64_t kRetryMs = 500;

  // All must outlive the worker. `poll_wait_ms`: how long the master may
  // hold an idle call (below the link's RPC timeout; 0: it answers at once
  // and the worker waits its `wait_ms`).
  TierWorker(msg::ClientId client, rpc::MasterClient& link, transfer::Segment& segment,
             tier::DiskTier& tier, uint32_t poll_wait_ms);
  ~TierWorker();  // Stop()
  // Starts the thread for the segment mounted as `segment_name`.
  void Start(const std::string& segment_name);
  // The store mounted again (a new incarnation): announce again.
  void Reannounce(msg::ClientId client);
  // Asks the thread to end without waiting for it: a call the master holds
  // still runs until the master answers (the segment's unmount answers it).
  void RequestStop();
  void Stop();  // RequestStop() and join
  // "host:/path": the disk's name at the master, the same across restarts.
  static std::string DiskId(const std::string& path);

 private:
  void Run();
  bool Announce();
  msg::TierResult Do(const msg::TierWork& work);
  bool Wait(uint64_t ms);  // true when stopping

  msg::ClientId client_;
  rpc::MasterClient& link_;
  transfer::Segment& segment_;
  tier::DiskTier& tier_;
  std::string segment_name_, disk_id_;
  const uint32_t poll_wait_ms_;
  std::thread thread_;
  std::mutex mu_;  // guards the three below and client_
  std::condition_variable cv_;
  bool stopping_ = false;
  bool announce_ = true;
  bool told_unsupported_ = false;
};

}  // namespace mc::store

// TierWorker: a store's side of the master's disk-tier work (issue 31).
//
// Once the segment is mounted, announces what the disk tier holds (the
// tier's index, read from its files' headers at start) and deletes what the
// master has no record of; then pulls the work the master queues for this
// store (TierFetch), runs it against its own segment and tier (offload:
// segment bytes to a file; stage: a file into segment bytes, verified
// against its checksum; delete) and reports the results in its next pull.
// An idle pull waits the master's `wait_ms` before the next. The master
// needs no heartbeat for it and the bytes never cross the network.
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

  // All must outlive the worker.
  TierWorker(msg::ClientId client, rpc::MasterClient& link, transfer::Segment& segment,
             tier::DiskTier& tier);
  ~TierWorker();  // Stop()
  // Starts the thread for the segment mounted as `segment_name`.
  void Start(const std::string& segment_name);
  // The store mounted again (a new incarnation): announce again.
  void Reannounce(msg::ClientId client);
  void Stop();
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
  std::thread thread_;
  std::mutex mu_;  // guards the three below and client_
  std::condition_variable cv_;
  bool stopping_ = false;
  bool announce_ = true;
  bool told_unsupported_ = false;
};

}  // namespace mc::store

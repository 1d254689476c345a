// Retirer: retires the ranges of removed and replaced objects on their
// stores before the master acknowledges the removal (issue 33, gap A).
//
// A client that cached where a key lives reads it straight from the store
// (a direct read, mooncake-protocol(7)); the store checks only that no byte
// of the range was written since. So when the master removes or replaces an
// object whose space nobody rewrites, it tells the store (the data port's
// RETIRE, transfer/retire_sender.h), and the operation's reply waits until
// the store acknowledged: a read that starts after the acknowledgement never
// returns the old version. The service hands over the ranges under its lock
// (Submit, in the order the state machine produced them) and waits after
// releasing it (Await); one sender thread carries every store's ranges,
// each store's in one pipelined batch, so removals arriving together share
// one round trip.
//
// A store that does not answer within max_wait_us (partitioned, stopped)
// does not hold the master up for longer (and for kRetireBackoffUs after a
// failure not at all): the reply goes out, the failure is counted,
// and a client that can still reach that store may read the old version
// from its cache for up to direct_read_ttl (as before this existed). Its
// ranges are not retried: a store the master cannot reach for client_ttl is
// declared dead and its segment unmounted, which voids its grants.
// Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "transfer/retire_sender.h"

namespace mc::masterd {

// Ranges queued at most; Submit waits for the sender past it.
inline constexpr size_t kMaxQueuedRetires = 1 << 18;
// Ranges sent in one pass of the sender at most.
inline constexpr size_t kMaxRetiresPerPass = 1 << 14;
// How long a reply waits for its retires by default.
inline constexpr uint64_t kDefaultRetireWaitUs = 1000000;
// After a store failed a pass, its ranges fail at once for this long rather
// than each pass waiting out another connect timeout.
inline constexpr uint64_t kRetireBackoffUs = 1000000;

class Retirer;
// The master process's retirer: the cluster's transfer token, the client
// side of [tls], a connect and I/O timeout of half the wait. Errors: [tls].
Result<std::unique_ptr<Retirer>> MakeRetirer(const Config& config);

class Retirer {
 public:
  struct Item {
    std::string endpoint;  // the store's data port, "host:port"
    transfer::RetireRange range;
  };
  struct Options {
    transfer::TcpTransportOptions tcp;  // token, TLS, connect and I/O timeouts
    uint64_t max_wait_us = kDefaultRetireWaitUs;
  };
  struct Stats {
    uint64_t retired = 0;     // ranges the stores acknowledged
    uint64_t failed = 0;      // ranges a store refused or did not answer
    uint64_t passes = 0;      // sender passes (round trips per store)
    uint64_t late_replies = 0;  // replies sent before their retires finished
  };

  explicit Retirer(Options options);
  ~Retirer();
  Retirer(const Retirer&) = delete;
  Retirer& operator=(const Retirer&) = delete;

  // Queues `items`; returns the ticket that covers them and everything
  // queued before (the last ticket when `items` is empty).
  uint64_t Submit(std::vector<Item> items);
  // Waits until every range up to `ticket` was sent (acknowledged or
  // failed), at most max_wait_us. False when it gave up waiting.
  bool Await(uint64_t ticket);
  Stats stats() const;

 private:
  void Run();
  void SendPass(std::vector<Item>& items);

  const Options options_;
  transfer::RetireSender sender_;  // the sender thread's
  std::map<std::string, uint64_t> down_until_us_;  // the sender thread's, by store
  mutable std::mutex mu_;
  std::condition_variable queued_cv_, done_cv_;
  std::deque<Item> queue_;
  uint64_t submitted_ = 0;  // ranges ever queued: the tickets
  uint64_t finished_ = 0;   // ranges sent, in queue order
  bool stop_ = false;
  Stats stats_;
  std::thread thread_;
};

}  // namespace mc::masterd

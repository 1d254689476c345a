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
// failure not at all): the reply goes out and the failure is counted. A
// client that can still reach that store may read the old version from its
// cache until its cached location expires (as before this existed) -- and,
// with one-sided RDMA writers, which move no epoch, it could read the bytes
// of the NEXT object written there under the old seal. So a failed range
// is reported (TakeOutcomes) and the master quarantines it
// (master/master_state_quarantine.cc): no new object gets it until a later
// RETIRE of it succeeded (the sender retries failed ranges with its next
// pass to that store once its backoff ended, for as long as the quarantine
// would last anyway; never on its own, so a store that stays down costs no
// extra connect timeouts) or the old seals expired. A reply that gave up waiting
// (Await false) presumes the ranges still in flight failed: they are
// reported failed at once, and reported recovered if their RETIRE succeeds
// later. Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/defaults.h"
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
// Failed ranges kept for a retry at most (the oldest are given up: their
// quarantine ends by time).
inline constexpr size_t kMaxRetiresRetried = 1 << 16;
// How long a range whose RETIRE failed stays quarantined at most: every
// grant and cached location that could name the old object's seal expired
// (kSealedReadGrantTtlUs bounds both), plus a margin for the clients'
// clocks and the time the failure took to be known.
inline constexpr uint64_t kRetireQuarantineUs = kSealedReadGrantTtlUs + 5000000;

class Retirer;
// The master process's retirer: the cluster's transfer token, the client
// side of [tls], a connect and I/O timeout of half the wait. Errors: [tls].
Result<std::unique_ptr<Retirer>> MakeRetirer(const Config& config);

class Retirer {
 public:
  struct Item {
    std::string endpoint;  // the store's data port, "host:port"
    transfer::RetireRange range;
    std::string segment;  // the segment's name (for the quarantine)
  };
  // Ranges whose RETIRE failed (or was presumed to) and failed ranges whose
  // later RETIRE succeeded, since the last TakeOutcomes.
  struct Outcomes {
    std::vector<Item> failed, recovered;
  };
  struct Options {
    transfer::TcpTransportOptions tcp;  // token, TLS, connect and I/O timeouts
    uint64_t max_wait_us = kDefaultRetireWaitUs;
    uint64_t backoff_us = kRetireBackoffUs;  // tests shorten it to retry at once
  };
  struct Stats {
    uint64_t retired = 0;     // ranges the stores acknowledged
    uint64_t failed = 0;      // ranges a store refused or did not answer
    uint64_t passes = 0;      // sender passes (round trips per store)
    uint64_t late_replies = 0;  // replies sent before their retires finished
    uint64_t retried = 0;    // failed ranges sent again
    uint64_t recovered = 0;  // of them (or presumed failed), acknowledged later
    uint64_t dropped_retries = 0;  // given up (past their quarantine, or the bound)
  };

  explicit Retirer(Options options);
  ~Retirer();
  Retirer(const Retirer&) = delete;
  Retirer& operator=(const Retirer&) = delete;

  // Queues `items`; returns the ticket that covers them and everything
  // queued before (the last ticket when `items` is empty).
  uint64_t Submit(std::vector<Item> items);
  // Waits until every range up to `ticket` was sent (acknowledged or
  // failed), at most max_wait_us. False when it gave up waiting; the ranges
  // up to `ticket` still unsent are then reported failed (see above).
  bool Await(uint64_t ticket);
  Stats stats() const;
  // Outcomes ever reported: a caller that saw it unchanged across its
  // Await has no failure of its ranges to apply (the count moves before
  // the ranges count as sent).
  uint64_t reported() const { return reported_.load(std::memory_order_acquire); }
  Outcomes TakeOutcomes();

 private:
  struct Retry {
    Item item;
    uint64_t give_up_us;  // the quarantine has ended by then: no use retrying
  };
  void Run();
  void SendPass(const std::vector<Item>& items, std::vector<Retry> retries);
  // Sender thread: the retries whose store is out of its backoff.
  std::vector<Retry> DueRetries(uint64_t now_us);
  void Report(std::vector<Item> failed, std::vector<Item> recovered);  // under mu_

  const Options options_;
  transfer::RetireSender sender_;  // the sender thread's
  std::map<std::string, uint64_t> down_until_us_;  // the sender thread's, by store
  mutable std::mutex mu_;
  std::condition_variable queued_cv_, done_cv_;
  std::deque<Item> queue_;
  std::vector<Item> pass_;   // in flight: ranges finished_ + 1 ... (read-only while sent)
  std::vector<Retry> retries_;  // the sender thread's: failed ranges to send again
  uint64_t submitted_ = 0;  // ranges ever queued: the tickets
  uint64_t finished_ = 0;   // ranges sent, in queue order
  uint64_t presumed_upto_ = 0;  // ranges up to it were reported failed by Await
  Outcomes outcomes_;
  std::atomic<uint64_t> reported_{0};
  bool stop_ = false;
  Stats stats_;
  std::thread thread_;
};

}  // namespace mc::masterd

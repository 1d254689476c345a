// Parking: calls the server answers later (long-polls), without a thread
// per call and without the caller polling.
//
// A Handler method that has nothing to answer yet (a store's disk-tier
// worker asking for work while none is queued; a put that must wait for
// space being written to disk) calls ParkCall(max_wait_us) from inside the
// method, on the server's I/O thread. On kParked the server discards what
// the method returns, keeps the request, and calls the same method again
// with the same request once the handler's ParkingLot is woken (Wake(),
// from any thread: something it may have waited for happened) or when
// max_wait_us has passed since the first call. At that last call ParkCall
// answers kDue and the method must answer. A method parked again after a
// wake keeps its first deadline. Outside a server (a test calling the
// handler directly), for notifications and for a server without a lot,
// ParkCall answers kUnavailable.
//
// So a parked method must not have changed anything a second call would
// change again: it decides to park before it acts. Replies of one
// connection then need not come back in request order (clients match
// replies by request id, as MasterClient does).
//
// ParkingLot is thread-safe; ParkCall is for the thread running the
// handler.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace mc::rpc {

enum class ParkAnswer : uint8_t {
  kParked,       // the server calls again later: whatever the method returns is dropped
  kDue,          // the wait is over (its bound passed): answer now
  kUnavailable,  // no parking here: answer now
};

// A call parked longer than this is due, whatever it asked for.
inline constexpr uint64_t kMaxParkUs = 30'000'000;

ParkAnswer ParkCall(uint64_t max_wait_us);

class ParkingLot {
 public:
  // Every parked call is called again soon (on its server's I/O thread).
  void Wake();
  // A counter Wake() raises: a call parked while it was N is called again
  // once it is not N.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  // The server's I/O threads: `wake` is called from Wake(), from any thread.
  void Subscribe(std::function<void()> wake);
  void Unsubscribe();

 private:
  std::atomic<uint64_t> generation_{0};
  std::mutex mu_;
  std::vector<std::function<void()>> wakes_;  // under mu_
};

// The server's side of ParkCall (rpc/server.cc): what one dispatch may do
// and what the handler asked for. Installed for the dispatch on its thread.
struct ParkScope {
  // `allowed`: the call may park (false at its deadline: kDue).
  explicit ParkScope(bool allowed, bool due);
  ~ParkScope();
  ParkScope(const ParkScope&) = delete;
  ParkScope& operator=(const ParkScope&) = delete;
  bool allowed;
  bool due;
  bool parked = false;
  uint64_t wait_us = 0;
  ParkScope* outer;
};

}  // namespace mc::rpc

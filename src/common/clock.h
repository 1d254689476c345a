// Time as an injected dependency. Master decisions take `now` from a Clock so
// tests advance a ManualClock instead of sleeping. Times are microseconds on
// a monotonic axis (not wall time). SystemClock is thread-safe; ManualClock
// is thread-safe for concurrent reads and advances.
#pragma once

#include <atomic>
#include <cstdint>

namespace mc {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual uint64_t NowUs() const = 0;
  uint64_t NowMs() const { return NowUs() / 1000; }
};

class SystemClock final : public Clock {
 public:
  uint64_t NowUs() const override;
  static SystemClock& Instance();
};

class ManualClock final : public Clock {
 public:
  explicit ManualClock(uint64_t start_us = 1000000) : now_us_(start_us) {}
  uint64_t NowUs() const override { return now_us_.load(); }
  void AdvanceUs(uint64_t us) { now_us_.fetch_add(us); }
  void AdvanceMs(uint64_t ms) { AdvanceUs(ms * 1000); }

 private:
  std::atomic<uint64_t> now_us_;
};

}  // namespace mc

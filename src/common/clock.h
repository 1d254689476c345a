// Time as an injected dependency. Master decisions take `now` from a Clock so
// tests advance a ManualClock instead of sleeping. A Clock gives two axes:
// NowUs, microseconds on a monotonic axis (leases, timeouts), and UnixMs,
// wall time (capability expiries, which a store on another host checks
// against its own wall clock). SystemClock is thread-safe; ManualClock is
// thread-safe for concurrent reads and advances, and moves both axes together.
#pragma once

#include <atomic>
#include <cstdint>

namespace mc {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual uint64_t NowUs() const = 0;
  virtual uint64_t UnixMs() const = 0;
  uint64_t NowMs() const { return NowUs() / 1000; }
};

class SystemClock final : public Clock {
 public:
  uint64_t NowUs() const override;
  uint64_t UnixMs() const override;
  static SystemClock& Instance();
};

class ManualClock final : public Clock {
 public:
  // 2024-01-01T00:00:00Z: a fixed, plausible wall time, so runs repeat.
  static constexpr uint64_t kDefaultStartUnixMs = 1704067200000;

  explicit ManualClock(uint64_t start_us = 1000000, uint64_t start_unix_ms = kDefaultStartUnixMs)
      : start_us_(start_us), start_unix_ms_(start_unix_ms), now_us_(start_us) {}
  uint64_t NowUs() const override { return now_us_.load(); }
  uint64_t UnixMs() const override { return start_unix_ms_ + (now_us_.load() - start_us_) / 1000; }
  void AdvanceUs(uint64_t us) { now_us_.fetch_add(us); }
  void AdvanceMs(uint64_t ms) { AdvanceUs(ms * 1000); }

 private:
  const uint64_t start_us_;
  const uint64_t start_unix_ms_;
  std::atomic<uint64_t> now_us_;
};

}  // namespace mc

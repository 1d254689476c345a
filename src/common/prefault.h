// Prefaulter: a thread that faults memory in ahead of the thread that will
// write it, so that a long single-threaded fill (the master's journal load)
// does not also pay for its page faults. On a VM that hands freed pages back
// to the host a fresh page costs a host-side fault and zeroing, about 3.5 s
// of CPU per GiB, which was the largest part of a large master's start-up.
//
// It uses madvise(MADV_POPULATE_WRITE) (Linux 5.14): the kernel maps the
// pages writable as a first write would, without reading or writing their
// contents, so the owner may write the same memory at the same time. On a
// kernel without it the thread stops trying; nothing else changes. A range
// that is freed before its turn is harmless (the call fails or populates
// whatever is mapped there then; neither changes memory contents).
// Thread-safe.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

namespace mc {

class Prefaulter {
 public:
  Prefaulter();
  ~Prefaulter();  // stops after the range in progress; the rest is left to first writes
  Prefaulter(const Prefaulter&) = delete;
  Prefaulter& operator=(const Prefaulter&) = delete;

  // Queues [p, p + bytes) (whole pages within it), after every range queued
  // before.
  void Add(const void* p, size_t bytes);
  // Waits until every queued range is done (for tests and benchmarks).
  void Drain();
  // Bytes populated so far.
  uint64_t populated_bytes() const;

 private:
  void Run();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<uintptr_t, size_t>> queue_;
  bool stop_ = false;
  bool busy_ = false;
  bool unsupported_ = false;
  uint64_t populated_ = 0;
  std::thread thread_;
};

}  // namespace mc

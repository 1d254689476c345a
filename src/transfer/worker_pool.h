// WorkerPool: a fixed set of helper threads that run the pieces of a parallel
// transfer. The calling thread always works too, so a caller makes progress
// even when every helper is busy with other callers' work; that is also why
// the queue can be bounded without risking deadlock (when it is full the
// caller simply gets fewer helpers). Thread-safe.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mc::transfer {

class WorkerPool {
 public:
  explicit WorkerPool(int threads, size_t max_queued_jobs = 1024);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Runs fn(i) for every i in [0, n) on the caller plus up to `helpers` pool
  // threads; returns when all n calls have returned.
  void ParallelFor(size_t n, int helpers, const std::function<void(size_t)>& fn);

  int threads() const { return static_cast<int>(threads_.size()); }

 private:
  void Loop();

  const size_t max_queued_jobs_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace mc::transfer

#include "transfer/worker_pool.h"

#include <atomic>
#include <memory>

namespace mc::transfer {

namespace {

// Shared between a caller and its helpers; a helper that starts after all
// indices are claimed returns without touching `fn` (the caller's stack).
struct Job {
  size_t n = 0;
  const std::function<void(size_t)>* fn = nullptr;
  std::atomic<size_t> next{0};
  std::atomic<size_t> finished{0};
  std::mutex mu;
  std::condition_variable cv;

  void Work() {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      (*fn)(i);
      if (finished.fetch_add(1) + 1 == n) {
        std::lock_guard<std::mutex> lock(mu);
        cv.notify_all();
      }
    }
  }
};

}  // namespace

WorkerPool::WorkerPool(int threads, size_t max_queued_jobs) : max_queued_jobs_(max_queued_jobs) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void WorkerPool::Loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

void WorkerPool::ParallelFor(size_t n, int helpers, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  auto job = std::make_shared<Job>();
  job->n = n;
  job->fn = &fn;
  size_t want = std::min<size_t>(static_cast<size_t>(std::max(helpers, 0)), n - 1);
  want = std::min<size_t>(want, threads_.size());
  if (want > 0) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t i = 0; i < want && queue_.size() < max_queued_jobs_; ++i) {
        queue_.emplace_back([job] { job->Work(); });
      }
    }
    cv_.notify_all();
  }
  job->Work();
  std::unique_lock<std::mutex> lock(job->mu);
  job->cv.wait(lock, [&] { return job->finished.load() == n; });
}

}  // namespace mc::transfer

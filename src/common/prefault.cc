#include "common/prefault.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older headers lack it
#endif

namespace mc {

namespace {
// One madvise call covers at most this much, so Drain and the destructor
// wait little and a range freed meanwhile is noticed soon.
constexpr size_t kPopulateStepBytes = size_t{2} << 20;
}  // namespace

Prefaulter::Prefaulter() : thread_([this] { Run(); }) {}

Prefaulter::~Prefaulter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Prefaulter::Add(const void* p, size_t bytes) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
  const auto end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(page - 1);
  if (end <= begin) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (unsupported_) return;
    queue_.emplace_back(begin, end - begin);
  }
  cv_.notify_all();
}

void Prefaulter::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
}

uint64_t Prefaulter::populated_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return populated_;
}

void Prefaulter::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    auto& [at, left] = queue_.front();
    const size_t step = std::min(left, kPopulateStepBytes);
    const uintptr_t from = at;
    at += step;
    left -= step;
    if (left == 0) queue_.pop_front();
    busy_ = true;
    lock.unlock();
    const int rc = ::madvise(reinterpret_cast<void*>(from), step, MADV_POPULATE_WRITE);
    const int err = errno;
    lock.lock();
    busy_ = false;
    if (rc == 0) {
      populated_ += step;
    } else if (err == EINVAL) {  // no MADV_POPULATE_WRITE here (or a range it refuses)
      unsupported_ = true;
      queue_.clear();
    }
    cv_.notify_all();
  }
}

}  // namespace mc

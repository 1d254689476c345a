// BatchPipe: hands batches of T from one producer thread to one consumer
// thread, the batches reused, so that two cores share a long sequential job
// (the master's journal load: one thread reads and checks rows, the other
// builds the index from them).
//
// The pipe owns `batches` batches of up to `batch_size` items each; an
// item keeps its heap capacity from one use to the next (strings, vectors),
// so a steady stream allocates nothing. The producer fills an empty batch
// (TakeEmpty), hands it over (PushFull) and finally calls Close; the
// consumer takes full batches in order (TakeFull) and gives each back
// (GiveBack). Either side may stop early: Cancel (the consumer) makes
// TakeEmpty return nullptr so the producer ends; Close before the end is how
// the producer stops. Bounded: at most `batches` batches exist.
// Thread-safe for exactly one producer and one consumer.
#pragma once

#include <cassert>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

namespace mc {

template <typename T>
class BatchPipe {
 public:
  struct Batch {
    std::vector<T> items;  // `batch_size` of them; the first `count` are filled
    size_t count = 0;
  };

  BatchPipe(size_t batches, size_t batch_size) : storage_(batches) {
    assert(batches >= 2 && batch_size >= 1);
    for (Batch& b : storage_) {
      b.items.resize(batch_size);
      empty_.push_back(&b);
    }
  }
  BatchPipe(const BatchPipe&) = delete;
  BatchPipe& operator=(const BatchPipe&) = delete;

  // Producer: a batch to fill (count 0), waiting for one; nullptr once the
  // consumer cancelled.
  Batch* TakeEmpty() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return cancelled_ || !empty_.empty(); });
    if (cancelled_) return nullptr;
    Batch* b = empty_.front();
    empty_.pop_front();
    b->count = 0;
    return b;
  }
  // Producer: `b` is filled; it reaches the consumer after every batch
  // pushed before it.
  void PushFull(Batch* b) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      full_.push_back(b);
    }
    cv_.notify_all();
  }
  // Producer: nothing more comes.
  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

  // Consumer: the next full batch, waiting for it; nullptr once the
  // producer closed and every batch it pushed was taken.
  Batch* TakeFull() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return closed_ || !full_.empty(); });
    if (full_.empty()) return nullptr;
    Batch* b = full_.front();
    full_.pop_front();
    return b;
  }
  // Consumer: done with `b`.
  void GiveBack(Batch* b) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      empty_.push_back(b);
    }
    cv_.notify_all();
  }
  // Consumer: stop the producer (its TakeEmpty returns nullptr).
  void Cancel() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;  // both sides wait on it; changes are rare (per batch)
  std::vector<Batch> storage_;
  std::deque<Batch*> empty_;
  std::deque<Batch*> full_;
  bool closed_ = false;
  bool cancelled_ = false;
};

}  // namespace mc

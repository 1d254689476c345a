#include "masterd/ha_log.h"

#include <cassert>
#include <chrono>

#include "common/log.h"
#include "masterd/service.h"

namespace mc::masterd {

namespace {
// The last change the calling thread queued (its own PutStarts' evictions):
// what a round of private requests waits for besides the last free.
thread_local uint64_t t_own_seq = 0;
thread_local const HaLog* t_own_log = nullptr;
}  // namespace

HaLog::HaLog(ha::EtcdKv& kv, ha::HaKeys keys, const Clock& clock, HaLogOptions options)
    : log_(kv, std::move(keys)), clock_(clock), options_(options) {}

HaLog::~HaLog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  if (writer_.joinable()) writer_.join();
}

void HaLog::Begin(const ha::Term& term, HaImage image) {
  std::lock_guard<std::mutex> lock(mu_);
  assert(!started_ && "a HaLog leads one term");
  started_ = true;
  term_ = term;
  stats_.entry_index = image.index();
  image_ = std::move(image);
  writer_ = std::thread([this] { WriterLoop(); });
}

void HaLog::Fail(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stats_.failure.empty()) stats_.failure = why;
    failed_.store(true, std::memory_order_release);
  }
  work_cv_.notify_all();
  done_cv_.notify_all();
  Wake();
}

bool HaLog::WaitDurableFor(uint64_t timeout_us) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = appended_;
  return done_cv_.wait_for(lock, std::chrono::microseconds(timeout_us), [&] {
    return durable_ >= target || failed_.load();
  }) && durable_ >= target;
}

void HaLog::Append(master::StateListener*, HaRecord record) {
  std::lock_guard<std::mutex> lock(mu_);
  // A commit frees space only when it rewrites an object the log already
  // holds (lost replicas, an upsert's swap): a tag we handed out before.
  const bool frees = record.kind == HaRecord::Kind::kUnmount ||
                     record.kind == HaRecord::Kind::kRemove ||
                     (record.kind == HaRecord::Kind::kCommit && record.object.listener_tag != 0);
  pending_.push_back(std::move(record));
  ++appended_;
  stats_.appended = appended_;
  if (frees) last_free_ = appended_;
  t_own_seq = appended_;
  t_own_log = this;
  work_cv_.notify_one();
}

void HaLog::OnSegmentMounted(const master::SegmentDump& segment) {
  Append(this, {.kind = HaRecord::Kind::kMount, .segment = segment});
}
void HaLog::OnSegmentUnmounted(std::string_view segment_name) {
  Append(this, {.kind = HaRecord::Kind::kUnmount, .name = std::string(segment_name)});
}
uint64_t HaLog::OnObjectCommitted(const master::ObjectDump& object) {
  Append(this, {.kind = HaRecord::Kind::kCommit, .object = object});
  return 1;  // the log finds objects by key; any non-zero tag will do
}
void HaLog::OnObjectRemoved(std::string_view key, uint64_t, master::RemoveReason) {
  Append(this, {.kind = HaRecord::Kind::kRemove, .name = std::string(key)});
}

uint64_t HaLog::Ticket(uint64_t requests) {
  const bool private_only = MasterService::TakePrivateOps() == requests;
  const uint64_t deadline = lease_deadline_us_.load(std::memory_order_acquire);
  if (deadline != 0 && clock_.NowUs() >= deadline) {
    Fail("the lease ran out before the replies left");
    std::lock_guard<std::mutex> lock(mu_);
    return appended_ + 1;  // never released: the round's connections are closed
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!private_only) return appended_;
  // As the journal's JournalGate: a round of PutStarts reveals nothing
  // durable, but the space it hands out may be what a not yet durable
  // removal freed, and its own evictions must be durable first.
  const uint64_t own = t_own_log == this ? t_own_seq : 0;
  return std::max(own, last_free_);
}

void HaLog::Subscribe(std::function<void()> wake) {
  std::lock_guard<std::mutex> lock(wake_mu_);
  wakes_.push_back(std::move(wake));
}

void HaLog::Unsubscribe() {
  std::lock_guard<std::mutex> lock(wake_mu_);
  wakes_.clear();
}

void HaLog::Wake() {
  std::lock_guard<std::mutex> lock(wake_mu_);
  for (const auto& w : wakes_) w();
}

HaLog::Stats HaLog::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void HaLog::WriterLoop() {
  uint64_t index = image_.index();
  for (;;) {
    std::vector<HaRecord> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stopping_ || failed_.load() || !pending_.empty(); });
      if (stopping_ || failed_.load()) return;
      // Take records up to the entry's limits; the rest wait for the next.
      size_t take = 0;
      size_t bytes = 0;
      std::string scratch;
      while (take < pending_.size() && take < kMaxRecordsPerHaEntry) {
        scratch.clear();
        EncodeHaRecord(pending_[take], &scratch);
        if (take > 0 && bytes + scratch.size() + 4 > ha::kMaxLogEntryBytes) break;
        bytes += scratch.size();
        ++take;
      }
      batch.assign(std::make_move_iterator(pending_.begin()),
                   std::make_move_iterator(pending_.begin() + static_cast<ptrdiff_t>(take)));
      pending_.erase(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(take));
    }
    const std::string entry = EncodeHaEntry(batch);
    const uint64_t start_us = clock_.NowUs();
    if (!Ship(index + 1, entry)) return;
    ++index;
    for (const HaRecord& r : batch) (void)image_.Apply(r);
    image_.set_index(index);
    const double seconds = static_cast<double>(clock_.NowUs() - start_us) / 1e6;
    {
      std::lock_guard<std::mutex> lock(mu_);
      durable_ += batch.size();
      stats_.durable = durable_;
      stats_.entry_index = index;
      ++stats_.entries;
      stats_.commit_seconds += seconds;
      stats_.last_commit_seconds = seconds;
      durable_seen_.store(durable_, std::memory_order_release);
    }
    done_cv_.notify_all();
    Wake();
    MaybeSnapshot();
  }
}

bool HaLog::Ship(uint64_t index, const std::string& entry) {
  bool unanswered = false;  // an earlier try may have landed
  for (;;) {
    if (failed_.load() || [&] {
          std::lock_guard<std::mutex> lock(mu_);
          return stopping_;
        }()) {
      return false;
    }
    Status st = log_.Append(term_, index, entry);
    if (st.ok()) return true;
    if (st.code() == ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS && unanswered) {
      // Fenced, or our own earlier try landed: read the entry back.
      auto back = log_.ReadAfter(index - 1, 1);
      if (back.ok() && !back->empty() && back->front().index == index &&
          back->front().data == entry) {
        return true;
      }
      if (!back.ok()) continue;  // etcd gone again: try once more
    }
    if (st.code() == ErrorCode::RPC_FAIL || st.code() == ErrorCode::RPC_TIMEOUT) {
      unanswered = true;
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++stats_.retries;
      }
      MC_LOG(WARN) << "HA log entry " << index << " not written, retrying: " << st.ToString();
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait_for(lock, std::chrono::microseconds(kHaRetryBackoffUs),
                        [&] { return stopping_ || failed_.load(); });
      continue;
    }
    MC_LOG(ERROR) << "HA log entry " << index << ": " << st.ToString();
    Fail(st.ToString());
    return false;
  }
}

void HaLog::MaybeSnapshot() {
  if (++since_snapshot_ < options_.snapshot_every_entries) return;
  since_snapshot_ = 0;
  const uint64_t start_us = clock_.NowUs();
  Status st = log_.WriteSnapshot(term_, image_.index(), image_.Snapshot());
  if (st.code() == ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS) {
    Fail(st.ToString());
    return;
  }
  if (!st.ok()) {
    MC_LOG(WARN) << "HA snapshot at entry " << image_.index() << " failed: " << st.ToString();
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.snapshots;
  stats_.snapshot_index = image_.index();
  MC_LOG(INFO) << "HA snapshot at entry " << image_.index() << ": " << image_.segments()
               << " segments, " << image_.objects() << " objects in "
               << (clock_.NowUs() - start_us) / 1000 << " ms";
}

}  // namespace mc::masterd

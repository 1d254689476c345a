#include "masterd/ha_log.h"

#include <algorithm>
#include <cassert>
#include <chrono>

#include "common/log.h"
#include "masterd/service.h"

namespace mc::masterd {

namespace {
// The last change the calling thread queued (its own PutStarts' evictions):
// what a round of private requests waits for besides the last free, when
// queued in that round (after t_own_ticketed, `t_own_seq` when the thread
// last took a ticket), as the journal's RoundTicket.
thread_local uint64_t t_own_seq = 0;
thread_local uint64_t t_own_ticketed = 0;
thread_local const HaLog* t_own_log = nullptr;
}  // namespace

HaLog::HaLog(ha::EtcdKv& kv, ha::HaKeys keys, const Clock& clock, HaLogOptions options,
             std::vector<ha::EtcdKv*> shipper_kvs)
    : kv_(kv), keys_(std::move(keys)), log_(kv, keys_), clock_(clock), options_(options) {
  assert(options_.entries_in_flight >= 1 && options_.entries_in_flight <= kMaxHaEntriesInFlight);
  assert(options_.pipeline_min_records >= 1);
  assert(shipper_kvs.empty() || shipper_kvs.size() == options_.entries_in_flight);
  stats_.cuts_by_in_flight.assign(options_.entries_in_flight, 0);
  shipper_logs_.reserve(options_.entries_in_flight);
  for (uint32_t i = 0; i < options_.entries_in_flight; ++i) {
    shipper_logs_.emplace_back(shipper_kvs.empty() ? kv_ : *shipper_kvs[i], keys_);
  }
}

HaLog::~HaLog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  ship_cv_.notify_all();
  backoff_cv_.notify_all();
  snapshot_cv_.notify_all();
  if (sequencer_.joinable()) sequencer_.join();
  if (snapshot_writer_.joinable()) snapshot_writer_.join();
  for (std::thread& t : shippers_) t.join();
}

void HaLog::Begin(const ha::Term& term, HaImage image) {
  std::lock_guard<std::mutex> lock(mu_);
  assert(!started_ && "a HaLog leads one term");
  started_ = true;
  term_ = term;
  stats_.entry_index = image.index();
  next_index_ = image.index();
  image_ = std::move(image);
  sequencer_ = std::thread([this] { SequencerLoop(); });
  snapshot_writer_ = std::thread([this] { SnapshotWriterLoop(); });
  for (ha::FencedLog& log : shipper_logs_) {
    shippers_.emplace_back([this, &log] { ShipperLoop(&log); });
  }
}

void HaLog::Fail(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stats_.failure.empty()) stats_.failure = why;
    failed_.store(true, std::memory_order_release);
  }
  work_cv_.notify_all();
  ship_cv_.notify_all();
  backoff_cv_.notify_all();
  snapshot_cv_.notify_all();
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
  if (pending_.empty()) pending_since_us_ = clock_.NowUs();
  pending_.push_back(std::move(record));
  ++appended_;
  // The sequencer checks CanCut on every record: with entries in flight the
  // queue may now be long enough for one more.
  stats_.appended = appended_;
  if (frees) last_free_ = appended_;
  if (t_own_log != this) t_own_ticketed = 0;
  t_own_seq = appended_;
  t_own_log = this;
  // Wake the sequencer only when it can cut: a wake-up per record that
  // finds the shippers busy costs two context switches for nothing (and
  // on a virtual machine a switch is dear).
  // Nor when it will linger (LingerUntilUs): but the first record then
  // wakes it to start the timer.
  if (CanCut() || (pending_.size() == 1 && options_.linger_us > 0)) work_cv_.notify_one();
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
  // A change this thread queued in an earlier round (another connection's
  // PutEnd) is that round's to wait for, not this one's.
  uint64_t own_this_round = 0;
  if (t_own_log == this) {
    if (t_own_seq > t_own_ticketed) own_this_round = t_own_seq;
    t_own_ticketed = t_own_seq;
  }
  if (!private_only) return appended_;
  // As the journal's JournalGate: a round of PutStarts reveals nothing
  // durable, but the space it hands out may be what a not yet durable
  // removal freed, and its own evictions must be durable first.
  return std::max(own_this_round, last_free_);
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

bool HaLog::Stopped() const { return stopping_ || failed_.load(); }

bool HaLog::CanCut() const {
  if (pending_.empty() || window_.size() >= options_.entries_in_flight) return false;
  // Each txn costs CPU on every etcd member (a few ms on a loaded host):
  // a handful of records rather wait for the entries in flight and go in
  // one bigger entry; a queue that outgrew them is worth a txn of its own.
  // Cutting whenever a shipper is free (min 1) was measured against this
  // (bench_ha.py, 16 writers, 2 cores, load 14): 2.2-3.3 records per entry
  // instead of 7, etcd CPU per put up by a third, and fewer puts/s.
  // The bar is also every record in flight (cut_ - durable_), so entries
  // keep the size the load gives them: with 64 writers a bar of 8 alone cut
  // entries of 13 records where one entry in flight at a time carried 26
  // (and a quarter more puts/s); with this bar they carry 20, and puts/s
  // rose by a seventh (bench_ha.py, medians of three, same run).
  // Three times what is in flight rather than once: on a machine whose
  // cores etcd shares, a smaller entry costs etcd a txn that the leader's
  // quicker image (a hash table of packed bodies) had freed CPU for; 16
  // writers x 32 keys, medians of three, same run: 49,827 puts/s at once,
  // 52,850 at twice, 53,785 at three times, 55,247 with one entry in
  // flight at a time. A burst that outgrows it still gets an entry of its
  // own while others are in flight.
  const uint64_t in_flight = options_.bar_in_flight ? cut_ - durable_ : 0;
  const uint64_t bar = std::max<uint64_t>(options_.pipeline_min_records,
                                          kHaPipelineBarFactor * in_flight);
  if (window_.empty()) return LingerUntilUs() == 0;
  return pending_.size() >= bar;
}

uint64_t HaLog::LingerUntilUs() const {
  // Measured (bench_ha.py, 16 and 64 writers x 32 keys, medians of three,
  // same run, 2 cores shared with a three-member etcd): one entry in
  // flight and 3 ms of linger, 42.4k and 39.6k puts/s, 540-570 records an
  // entry at 16 writers (270-290 without); one in flight without it 39.2k
  // and 38.8k; four in flight without it (the earlier default) 35.2k and
  // 30.1k. etcd's CPU follows its txns far more than their bytes.
  if (options_.linger_us == 0 || last_cut_records_ < kHaLingerMinRecords ||
      pending_.size() >= kHaLingerMaxRecords || pending_.empty()) {
    return 0;
  }
  const uint64_t until = pending_since_us_ + options_.linger_us;
  return clock_.NowUs() < until ? until : 0;
}

void HaLog::SequencerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    const auto ready = [&] {
      return Stopped() || !to_apply_.empty() || CanCut() || SnapshotDue();
    };
    while (!ready()) {
      // Lingering, nothing will wake us when the time is up: wait that
      // long at most (a record that fills the queue still wakes us).
      const uint64_t until = window_.empty() ? LingerUntilUs() : 0;
      if (until == 0) {
        work_cv_.wait(lock);
      } else {
        work_cv_.wait_for(lock, std::chrono::microseconds(until - std::min(until, clock_.NowUs())));
      }
    }
    if (Stopped()) return;
    // Cut first: a free shipper should not wait for the image.
    if (CanCut() && CutEntry(lock)) continue;
    if (to_apply_.empty()) {  // a snapshot deferred while the last was written
      lock.unlock();
      MaybeSnapshot(/*new_entries=*/0);
      lock.lock();
      continue;
    }
    std::vector<Entry> done;
    done.swap(to_apply_);
    lock.unlock();
    for (Entry& e : done) {
      for (const HaRecord& r : e.records) (void)image_.Apply(r);
      image_.set_index(e.index);
      MaybeSnapshot(1);
    }
    lock.lock();
  }
}

bool HaLog::CutEntry(std::unique_lock<std::mutex>& lock) {
  if (pending_.empty()) return false;
  // Move out at most an entry's records; what does not fit in its bytes
  // goes back to the front of the queue.
  std::vector<HaRecord> batch;
  if (pending_.size() <= kMaxRecordsPerHaEntry) {
    batch.swap(pending_);
  } else {
    batch.assign(std::make_move_iterator(pending_.begin()),
                 std::make_move_iterator(pending_.begin() + kMaxRecordsPerHaEntry));
    pending_.erase(pending_.begin(), pending_.begin() + kMaxRecordsPerHaEntry);
  }
  const uint64_t queued_us = pending_since_us_;
  pending_since_us_ = clock_.NowUs();  // what stays queued waits from now
  const uint64_t index = ++next_index_;
  // Reserve the entry's place in the window before unlocking, so entries
  // stay in index order while this one is encoded.
  window_.push_back({.index = index});
  lock.unlock();
  const uint64_t start_us = clock_.NowUs();
  size_t taken = 0;
  std::string data = EncodeHaEntryUpTo(batch, ha::kMaxLogEntryBytes, &taken);
  const uint64_t encoded_us = clock_.NowUs();
  lock.lock();
  if (taken < batch.size()) {
    pending_.insert(pending_.begin(), std::make_move_iterator(batch.begin() + taken),
                    std::make_move_iterator(batch.end()));
    batch.resize(taken);
  }
  cut_ += taken;
  last_cut_records_ = taken;
  Entry& e = window_[index - window_.front().index];
  e.record_end = cut_;
  e.queued_us = queued_us;
  e.records = std::move(batch);
  e.data = std::move(data);
  stats_.encode_seconds += static_cast<double>(encoded_us - start_us) / 1e6;
  stats_.queue_wait_seconds += static_cast<double>(start_us - queued_us) / 1e6;
  stats_.in_flight_max = std::max<uint64_t>(stats_.in_flight_max, window_.size());
  ++stats_.cuts_by_in_flight[window_.size() - 1];
  // One: every idle shipper would wake to find one entry (a shipper
  // waiting out a retry backoff waits on backoff_cv_).
  ship_cv_.notify_one();
  return true;
}

void HaLog::ShipperLoop(ha::FencedLog* log) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    Entry* next = nullptr;
    ship_cv_.wait(lock, [&] {
      if (Stopped()) return true;
      for (Entry& e : window_) {
        if (!e.sending && !e.data.empty()) {
          next = &e;
          return true;
        }
      }
      return false;
    });
    if (Stopped()) return;
    next->sending = true;
    const uint64_t index = next->index;
    // The deque only grows at the back and shrinks at the front past
    // committed entries, so `next` (not committed) stays valid; its data is
    // not touched by anyone else while it is sending.
    const std::string& data = next->data;
    lock.unlock();
    // Deflated here rather than where it is cut: the sequencer is one
    // thread, the shippers as many as entries in flight.
    const uint64_t packed_us = clock_.NowUs();
    const std::string packed = options_.compress ? CompressHaEntry(data) : std::string();
    const std::string& shipped = packed.empty() ? data : packed;
    const uint64_t start_us = clock_.NowUs();
    const bool ok = Ship(*log, index, shipped);
    const double seconds = static_cast<double>(clock_.NowUs() - start_us) / 1e6;
    lock.lock();
    if (!ok) return;
    stats_.compress_seconds += static_cast<double>(start_us - packed_us) / 1e6;
    stats_.plain_bytes += data.size();
    stats_.shipped_bytes += shipped.size();
    Committed(index, seconds);
  }
}

void HaLog::Committed(uint64_t index, double seconds) {
  window_[index - window_.front().index].committed = true;
  ++stats_.entries;
  stats_.last_commit_seconds = seconds;
  stats_.commit_latency.Add(seconds);
  bool released = false;
  const uint64_t now_us = clock_.NowUs();
  while (!window_.empty() && window_.front().committed) {
    Entry& e = window_.front();
    stats_.durable_latency.Add(static_cast<double>(now_us - std::min(now_us, e.queued_us)) / 1e6);
    durable_ = e.record_end;
    stats_.entry_index = e.index;
    e.data.clear();
    to_apply_.push_back(std::move(e));
    window_.pop_front();
    released = true;
  }
  if (!released) return;  // an earlier entry is still on its way
  stats_.durable = durable_;
  durable_seen_.store(durable_, std::memory_order_release);
  done_cv_.notify_all();
  work_cv_.notify_one();
  Wake();
}

bool HaLog::Ship(ha::FencedLog& log, uint64_t index, const std::string& entry) {
  for (;;) {
    if ([&] {
          std::lock_guard<std::mutex> lock(mu_);
          return Stopped();
        }()) {
      return false;
    }
    Status st = log.Append(term_, index, entry);
    if (st.ok()) return true;
    if (st.code() == ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS) {
      // Fenced, or an earlier try of ours landed: one we sent again after
      // no answer, or one the etcd client sent again to another member by
      // itself (EtcdHttp does, after a timeout). Read the entry back.
      auto back = log.ReadAfter(index - 1, 1);
      if (back.ok() && !back->empty() && back->front().index == index &&
          back->front().data == entry) {
        return true;
      }
      if (!back.ok()) continue;  // etcd gone again: try once more
    }
    if (st.code() == ErrorCode::RPC_FAIL || st.code() == ErrorCode::RPC_TIMEOUT) {
      std::unique_lock<std::mutex> lock(mu_);
      ++stats_.retries;
      MC_LOG(WARN) << "HA log entry " << index << " not written, retrying: " << st.ToString();
      backoff_cv_.wait_for(lock, std::chrono::microseconds(kHaRetryBackoffUs),
                           [&] { return Stopped(); });
      continue;
    }
    // Refused: fenced (another master leads) or anything else etcd will
    // not take. Later entries may have landed; they were never released
    // and the next leader drops them (FencedLog::DropAfter).
    MC_LOG(ERROR) << "HA log entry " << index << ": " << st.ToString();
    Fail(st.ToString());
    return false;
  }
}

bool HaLog::SnapshotDue() const {
  return !snapshot_busy_ && since_snapshot_ >= options_.snapshot_every_entries;
}

// The image is written out here, on the sequencer (the image is its own),
// and handed to the snapshot writer, which puts it in etcd: a snapshot's
// chunks are txns of a megabyte each, and the cutting of entries (every
// reply) waited for them when this thread wrote them (bench_ha.py: a
// 512 MiB pool of 4 KiB objects, a snapshot every 1000 entries).
void HaLog::MaybeSnapshot(uint64_t new_entries) {
  std::unique_lock<std::mutex> lock(mu_);
  since_snapshot_ += new_entries;
  if (!SnapshotDue()) return;  // not yet, or the last one is still being written
  snapshot_busy_ = true;
  since_snapshot_ = 0;
  lock.unlock();
  SnapshotJob job{.index = image_.index(), .segments = image_.segments(),
                  .objects = image_.objects(), .start_us = clock_.NowUs()};
  job.bytes = image_.Snapshot();
  lock.lock();
  snapshot_job_ = std::move(job);
  lock.unlock();
  snapshot_cv_.notify_one();
}

void HaLog::SnapshotWriterLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    snapshot_cv_.wait(lock, [&] { return Stopped() || snapshot_job_.has_value(); });
    if (Stopped()) return;
    SnapshotJob job = std::move(*snapshot_job_);
    snapshot_job_.reset();
    lock.unlock();
    Status st = log_.WriteSnapshot(term_, job.index, job.bytes);
    if (st.code() == ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS) {
      Fail(st.ToString());
      return;
    }
    if (!st.ok()) {
      MC_LOG(WARN) << "HA snapshot at entry " << job.index << " failed: " << st.ToString();
    } else {
      MC_LOG(INFO) << "HA snapshot at entry " << job.index << ": " << job.segments
                   << " segments, " << job.objects << " objects, " << job.bytes.size()
                   << " bytes in " << (clock_.NowUs() - job.start_us) / 1000 << " ms";
    }
    lock.lock();
    if (st.ok()) {
      ++stats_.snapshots;
      stats_.snapshot_index = job.index;
    }
    snapshot_busy_ = false;
    work_cv_.notify_one();  // the next may be due already
  }
}

}  // namespace mc::masterd

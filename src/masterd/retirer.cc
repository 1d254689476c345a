#include "masterd/retirer.h"

#include <chrono>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "common/clock.h"
#include "common/log.h"
#include "config/config.h"
#include "net/socket.h"
#include "tls/tls_setup.h"

namespace mc::masterd {

namespace {
uint64_t MonotonicNowUs() { return SystemClock::Instance().NowUs(); }
}  // namespace

Result<std::unique_ptr<Retirer>> MakeRetirer(const Config& config) {
  auto tls = ClientTls(config.tls);
  if (!tls.ok()) return tls.status();
  Retirer::Options o;
  o.tcp.tls = std::move(*tls);
  o.tcp.auth_token = config.cluster.auth_token;
  // A store that does not answer gives up its retires within the wait.
  o.tcp.connect_timeout_us = o.max_wait_us / 2;
  o.tcp.tuning.io_timeout_us = o.max_wait_us / 2;
  return std::make_unique<Retirer>(std::move(o));
}

Retirer::Retirer(Options options)
    : options_(std::move(options)), sender_(options_.tcp), thread_([this] { Run(); }) {}

Retirer::~Retirer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  queued_cv_.notify_all();
  thread_.join();
}

uint64_t Retirer::Submit(std::vector<Item> items) {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return stop_ || queue_.size() + items.size() <= kMaxQueuedRetires ||
                                   queue_.empty(); });
  if (items.empty()) return submitted_;
  for (Item& i : items) queue_.push_back(std::move(i));
  submitted_ += items.size();
  lock.unlock();
  queued_cv_.notify_one();
  return submitted_;
}

bool Retirer::Await(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mu_);
  if (finished_ >= ticket) return true;
  const bool done = done_cv_.wait_for(lock, std::chrono::microseconds(options_.max_wait_us),
                                      [&] { return stop_ || finished_ >= ticket; });
  if (done && finished_ >= ticket) return true;
  ++stats_.late_replies;
  // The reply goes out before these ranges' outcome is known: presume they
  // failed (the caller quarantines them), recover them if they succeed.
  if (ticket > presumed_upto_) {
    std::vector<Item> presumed;
    uint64_t seq = finished_;
    for (const Item& i : pass_) {
      if (++seq > presumed_upto_ && seq <= ticket) presumed.push_back(i);
    }
    for (const Item& i : queue_) {
      if (++seq > ticket) break;
      if (seq > presumed_upto_) presumed.push_back(i);
    }
    presumed_upto_ = ticket;
    Report(std::move(presumed), {});
  }
  return false;
}

Retirer::Stats Retirer::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

Retirer::Outcomes Retirer::TakeOutcomes() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(outcomes_, {});
}

void Retirer::Report(std::vector<Item> failed, std::vector<Item> recovered) {
  const uint64_t n = failed.size() + recovered.size();
  if (n == 0) return;
  for (Item& i : failed) outcomes_.failed.push_back(std::move(i));
  for (Item& i : recovered) outcomes_.recovered.push_back(std::move(i));
  stats_.recovered += recovered.size();
  reported_.fetch_add(n, std::memory_order_release);
}

void Retirer::Run() {
  for (;;) {
    std::vector<Retry> retries;
    {
      std::unique_lock<std::mutex> lock(mu_);
      queued_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      const size_t n = std::min(queue_.size(), kMaxRetiresPerPass);
      pass_.assign(std::make_move_iterator(queue_.begin()),
                   std::make_move_iterator(queue_.begin() + static_cast<ptrdiff_t>(n)));
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<ptrdiff_t>(n));
    }
    if (!retries_.empty()) retries = DueRetries(MonotonicNowUs());
    SendPass(pass_, std::move(retries));
    {
      std::lock_guard<std::mutex> lock(mu_);
      finished_ += pass_.size();
      pass_.clear();
    }
    done_cv_.notify_all();
  }
}

std::vector<Retirer::Retry> Retirer::DueRetries(uint64_t now_us) {
  // Only with a pass that goes to their store anyway: a store that stays
  // down costs no extra connect timeout on this thread (which would delay
  // every other store's retires), and its ranges wait for their time.
  std::set<std::string_view> stores;
  for (const Item& i : pass_) stores.insert(i.endpoint);
  std::vector<Retry> due;
  std::erase_if(retries_, [&](Retry& r) {
    if (r.give_up_us <= now_us) {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.dropped_retries;
      return true;
    }
    if (!stores.contains(r.item.endpoint)) return false;
    auto down = down_until_us_.find(r.item.endpoint);
    if (down != down_until_us_.end() && now_us < down->second) return false;
    due.push_back(std::move(r));
    return true;
  });
  return due;
}

void Retirer::SendPass(const std::vector<Item>& items, std::vector<Retry> retries) {
  // By store: the ranges, and for each its source (index into items, or
  // into retries past items.size()).
  struct Batch {
    std::vector<transfer::RetireRange> ranges;
    std::vector<size_t> from;
  };
  std::map<std::string, Batch> by_store;
  for (size_t i = 0; i < items.size(); ++i) {
    Batch& b = by_store[items[i].endpoint];
    b.ranges.push_back(items[i].range);
    b.from.push_back(i);
  }
  for (size_t i = 0; i < retries.size(); ++i) {
    Batch& b = by_store[retries[i].item.endpoint];
    b.ranges.push_back(retries[i].item.range);
    b.from.push_back(items.size() + i);
  }
  uint64_t retired = 0, failed = 0;
  std::vector<Item> recovered;
  std::vector<size_t> ok_new, failed_new;  // indexes into items
  std::vector<Retry> again;
  for (const auto& [endpoint, batch] : by_store) {
    const uint64_t now_us = MonotonicNowUs();
    auto down = down_until_us_.find(endpoint);
    Status st = Status::Ok();
    if (down != down_until_us_.end() && now_us < down->second) {
      st = Error(ErrorCode::TRANSFER_FAIL, "backing off");
    } else {
      auto hp = net::ParseHostPort(endpoint);
      st = hp.ok() ? sender_.Retire({hp->host, hp->port, ""}, batch.ranges) : hp.status();
      if (!st.ok()) {
        down_until_us_[endpoint] = MonotonicNowUs() + options_.backoff_us;
        MC_LOG(WARN) << "retiring " << batch.ranges.size() << " ranges on store " << endpoint
                     << " failed: " << st.ToString()
                     << " (quarantined: no new object gets them until a retry succeeds or "
                     << kRetireQuarantineUs / 1000000 << " s passed)";
      } else if (down != down_until_us_.end()) {
        down_until_us_.erase(down);
      }
    }
    for (size_t f : batch.from) {
      const bool retry = f >= items.size();
      if (st.ok()) {
        ++retired;
        if (retry) {
          recovered.push_back(retries[f - items.size()].item);
        } else {
          ok_new.push_back(f);
        }
        continue;
      }
      ++failed;
      if (retry) {
        again.push_back(std::move(retries[f - items.size()]));
        continue;
      }
      failed_new.push_back(f);
      again.push_back({items[f], now_us + kRetireQuarantineUs});
    }
  }
  for (Retry& r : again) retries_.push_back(std::move(r));
  size_t dropped = 0;
  if (retries_.size() > kMaxRetiresRetried) {  // the oldest go: their quarantine ends by time
    dropped = retries_.size() - kMaxRetiresRetried;
    retries_.erase(retries_.begin(), retries_.begin() + static_cast<ptrdiff_t>(dropped));
  }
  std::lock_guard<std::mutex> lock(mu_);
  // Ranges a reply presumed failed (Await) were reported then: a success
  // now is a recovery, a failure is not reported twice. Decided under mu_,
  // where Await presumes, before these ranges count as finished.
  const uint64_t first_seq = finished_ + 1;
  std::vector<Item> failed_items;
  for (size_t f : failed_new) {
    if (first_seq + f > presumed_upto_) failed_items.push_back(items[f]);
  }
  if (presumed_upto_ >= first_seq) {
    for (size_t f : ok_new) {
      if (first_seq + f <= presumed_upto_) recovered.push_back(items[f]);
    }
  }
  Report(std::move(failed_items), std::move(recovered));
  stats_.retired += retired;
  stats_.failed += failed;
  stats_.retried += retries.size();
  stats_.dropped_retries += dropped;
  ++stats_.passes;
}

}  // namespace mc::masterd

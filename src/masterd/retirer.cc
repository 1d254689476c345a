#include "masterd/retirer.h"

#include <chrono>
#include <map>

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
  if (!done) ++stats_.late_replies;
  return done && finished_ >= ticket;
}

Retirer::Stats Retirer::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void Retirer::Run() {
  std::vector<Item> pass;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      queued_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      const size_t n = std::min(queue_.size(), kMaxRetiresPerPass);
      pass.assign(std::make_move_iterator(queue_.begin()),
                  std::make_move_iterator(queue_.begin() + static_cast<ptrdiff_t>(n)));
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<ptrdiff_t>(n));
    }
    SendPass(pass);
    {
      std::lock_guard<std::mutex> lock(mu_);
      finished_ += pass.size();
    }
    done_cv_.notify_all();
  }
}

void Retirer::SendPass(std::vector<Item>& items) {
  std::map<std::string, std::vector<transfer::RetireRange>> by_store;
  for (Item& i : items) by_store[i.endpoint].push_back(std::move(i.range));
  uint64_t retired = 0, failed = 0;
  for (const auto& [endpoint, ranges] : by_store) {
    const uint64_t now_us = MonotonicNowUs();
    auto down = down_until_us_.find(endpoint);
    if (down != down_until_us_.end() && now_us < down->second) {
      failed += ranges.size();
      continue;
    }
    auto hp = net::ParseHostPort(endpoint);
    Status st = hp.ok() ? sender_.Retire({hp->host, hp->port, ""}, ranges) : hp.status();
    if (st.ok()) {
      retired += ranges.size();
      if (down != down_until_us_.end()) down_until_us_.erase(down);
      continue;
    }
    failed += ranges.size();
    down_until_us_[endpoint] = MonotonicNowUs() + kRetireBackoffUs;
    MC_LOG(WARN) << "retiring " << ranges.size() << " ranges on store " << endpoint
                 << " failed: " << st.ToString()
                 << " (direct reads of them may return the old version until their TTL)";
  }
  std::lock_guard<std::mutex> lock(mu_);
  stats_.retired += retired;
  stats_.failed += failed;
  ++stats_.passes;
}

}  // namespace mc::masterd

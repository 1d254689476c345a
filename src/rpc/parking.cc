#include "rpc/parking.h"

#include <algorithm>

namespace mc::rpc {

namespace {
thread_local ParkScope* t_scope = nullptr;  // the dispatch running on this thread
}  // namespace

ParkScope::ParkScope(bool allowed_, bool due_) : allowed(allowed_), due(due_), outer(t_scope) {
  t_scope = this;
}

ParkScope::~ParkScope() { t_scope = outer; }

ParkAnswer ParkCall(uint64_t max_wait_us) {
  ParkScope* s = t_scope;
  if (s == nullptr) return ParkAnswer::kUnavailable;
  if (s->due) return ParkAnswer::kDue;
  if (!s->allowed || max_wait_us == 0) return ParkAnswer::kUnavailable;
  s->parked = true;
  s->wait_us = std::min(max_wait_us, kMaxParkUs);
  return ParkAnswer::kParked;
}

void ParkingLot::Wake() {
  generation_.fetch_add(1, std::memory_order_acq_rel);
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& w : wakes_) w();
}

void ParkingLot::Subscribe(std::function<void()> wake) {
  std::lock_guard<std::mutex> lock(mu_);
  wakes_.push_back(std::move(wake));
}

void ParkingLot::Unsubscribe() {
  std::lock_guard<std::mutex> lock(mu_);
  wakes_.clear();
}

}  // namespace mc::rpc

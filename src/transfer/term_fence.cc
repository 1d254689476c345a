#include "transfer/term_fence.h"

namespace mc::transfer {

TermFence::Pass& TermFence::Pass::operator=(Pass&& o) noexcept {
  if (this != &o) {
    Release();
    fence_ = o.fence_;
    term_ = o.term_;
    o.fence_ = nullptr;
  }
  return *this;
}

void TermFence::Pass::Release() {
  if (fence_ != nullptr) fence_->Leave(term_);
  fence_ = nullptr;
}

void TermFence::RaiseLocked(uint64_t term) {
  if (term <= term_) return;
  older_ += current_;
  current_ = 0;
  term_ = term;
}

std::optional<TermFence::Pass> TermFence::Enter(uint64_t term) {
  std::unique_lock<std::mutex> lock(mu_);
  RaiseLocked(term);
  drained_.wait(lock, [&] { return older_ == 0 || term_ != term; });
  if (term_ != term) return std::nullopt;
  ++current_;
  return Pass(this, term);
}

void TermFence::Raise(uint64_t term) {
  std::lock_guard<std::mutex> lock(mu_);
  RaiseLocked(term);
}

uint64_t TermFence::term() const {
  std::lock_guard<std::mutex> lock(mu_);
  return term_;
}

void TermFence::Leave(uint64_t term) {
  std::lock_guard<std::mutex> lock(mu_);
  if (term == term_) {
    --current_;
  } else if (--older_ == 0) {
    drained_.notify_all();
  }
}

}  // namespace mc::transfer

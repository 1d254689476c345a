// TermFence: a store's fence against grants of a deposed master.
//
// Why: grants carry the term of the master that signed them (the HA
// leader's term, common/capability.h). After a failover the new leader
// knows none of the old one's puts or leases, and may hand their space to
// another object at once. A grant cannot be revoked, so the store refuses
// it by its term: once a request with a verified grant of term T (or a Ping
// reply naming T) was seen, a grant of a lower term is refused. And a request
// of term T moves bytes only once no request of a lower term that was
// admitted before is still moving them, so no write or read of the old
// leader's lands after the new leader's first one on this store.
//
// Enter() is called per request after the grant's signature verified and
// before any byte moves; the Pass it returns is held until the request's
// bytes have moved (for a READ: until its queued reply left). A caller that
// holds passes must give them up before it enters under another term, or it
// would wait for itself. Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>

namespace mc::transfer {

class TermFence {
 public:
  class Pass {
   public:
    Pass(Pass&& o) noexcept : fence_(o.fence_), term_(o.term_) { o.fence_ = nullptr; }
    Pass& operator=(Pass&& o) noexcept;
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;
    ~Pass() { Release(); }
    uint64_t term() const { return term_; }
    void Release();

   private:
    friend class TermFence;
    Pass(TermFence* f, uint64_t term) : fence_(f), term_(term) {}
    TermFence* fence_;
    uint64_t term_;
  };

  // Admits one request under `term`: nullopt if a newer term was seen (now
  // or while it waited for older requests to finish).
  std::optional<Pass> Enter(uint64_t term);
  // Learns `term` without a request (a Ping reply): later requests of a
  // lower term are refused; requests already admitted finish.
  void Raise(uint64_t term);
  // The highest term seen.
  uint64_t term() const;

 private:
  void RaiseLocked(uint64_t term);  // under mu_
  void Leave(uint64_t term);

  mutable std::mutex mu_;
  std::condition_variable drained_;
  uint64_t term_ = 0;     // under mu_
  uint64_t current_ = 0;  // under mu_: admitted requests of term_ still moving bytes
  uint64_t older_ = 0;    // under mu_: admitted requests of a lower term still moving bytes
};

}  // namespace mc::transfer

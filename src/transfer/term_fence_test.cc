#include "transfer/term_fence.h"

#include <doctest/doctest.h>

#include <atomic>
#include <thread>

using mc::transfer::TermFence;

TEST_CASE("a grant of an older term is refused once a newer one entered") {
  TermFence fence;
  { CHECK(fence.Enter(3).has_value()); }
  CHECK(fence.term() == 3);
  CHECK_FALSE(fence.Enter(2).has_value());
  CHECK(fence.Enter(3).has_value());
  CHECK(fence.Enter(4).has_value());
  CHECK_FALSE(fence.Enter(3).has_value());
}

TEST_CASE("without HA every grant has term 0 and all are admitted together") {
  TermFence fence;
  auto a = fence.Enter(0);
  auto b = fence.Enter(0);
  CHECK(a.has_value());
  CHECK(b.has_value());
}

TEST_CASE("a term learnt from a ping refuses older grants before any request of it") {
  TermFence fence;
  fence.Raise(7);
  CHECK_FALSE(fence.Enter(6).has_value());
  fence.Raise(5);  // never lowers
  CHECK(fence.term() == 7);
  CHECK(fence.Enter(7).has_value());
}

TEST_CASE("the first request of a new term waits until older requests moved their bytes") {
  TermFence fence;
  std::optional<TermFence::Pass> old = fence.Enter(1);
  REQUIRE(old.has_value());
  std::atomic<bool> released{false};
  std::atomic<bool> entered_after_release{false};
  std::thread newer([&] {
    auto p = fence.Enter(2);
    entered_after_release = p.has_value() && released.load();
  });
  // Another request of the old term that comes now is refused or waits,
  // but never lands after the new term's: here it is refused once the new
  // term is known.
  fence.Raise(2);
  CHECK_FALSE(fence.Enter(1).has_value());
  released = true;
  old->Release();
  newer.join();
  CHECK(entered_after_release.load());
}

TEST_CASE("a request waiting behind older ones is refused when a still newer term arrives") {
  TermFence fence;
  std::optional<TermFence::Pass> old = fence.Enter(1);
  std::atomic<int> outcome{-1};
  fence.Raise(2);
  std::thread waiter([&] { outcome = fence.Enter(2).has_value() ? 1 : 0; });
  fence.Raise(3);
  old.reset();
  waiter.join();
  CHECK(outcome.load() == 0);
  CHECK(fence.Enter(3).has_value());
}

TEST_CASE("a moved pass leaves the fence once") {
  TermFence fence;
  auto a = fence.Enter(1);
  TermFence::Pass moved = std::move(*a);
  a.reset();
  fence.Raise(2);
  std::thread t([&] { CHECK(fence.Enter(2).has_value()); });
  moved.Release();
  t.join();
}

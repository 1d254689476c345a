// PutPlacement: preferred segments and hosts, per-put pin TTLs, hard pins.
#include <doctest/doctest.h>

#include "master/master_test_util.h"

namespace mc::master {
namespace {

using testing::Client;
using testing::Harness;
using testing::SegmentsOf;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kSecond = 1000000;

Result<msg::PutStartReply> StartWith(Harness& h, const std::string& key, uint64_t size,
                                       uint32_t replicas, msg::PutPlacement placement,
                                       bool pin = false) {
  msg::PutOptions o{replicas, pin, std::move(placement)};
  return h.state->PutStart({Client(1), key, size, o}, h.now_us);
}

TEST_CASE("a preferred segment gets the replica even when it is not the emptiest") {
  Harness h;
  REQUIRE(h.Mount(1, "a", 16 * kMiB).ok());
  REQUIRE(h.Mount(1, "b", 16 * kMiB).ok());
  REQUIRE(h.Put("fill", 4 * kMiB).ok());  // "a" or "b" is now fuller
  const std::string fuller = SegmentsOf(h.Get("fill")->replicas[0]).count("a") ? "a" : "b";
  auto r = StartWith(h, "k", kMiB, 1, {{fuller}, "", 0, false});
  REQUIRE(r.ok());
  CHECK(SegmentsOf(r->replicas[0]) == std::set<std::string>{fuller});
  // Two replicas, each with its own wish.
  auto two = StartWith(h, "k2", kMiB, 2, {{"b", "a"}, "", 0, false});
  REQUIRE(two.ok());
  CHECK(SegmentsOf(two->replicas[0]) == std::set<std::string>{"b"});
  CHECK(SegmentsOf(two->replicas[1]) == std::set<std::string>{"a"});
}

TEST_CASE("a preferred segment that is full, unknown or dead falls back to normal placement") {
  Harness h;
  REQUIRE(h.Mount(1, "a", 4 * kMiB).ok());
  REQUIRE(h.Mount(2, "b", 16 * kMiB).ok());
  h.live = {1, 2};
  auto full = StartWith(h, "big", 8 * kMiB, 1, {{"a"}, "", 0, false});
  REQUIRE(full.ok());
  CHECK(SegmentsOf(full->replicas[0]) == std::set<std::string>{"b"});
  CHECK(StartWith(h, "unknown", kMiB, 1, {{"nope"}, "", 0, false}).ok());
  h.live = {2};
  h.Advance(h.config.client_ttl_us + kSecond);
  auto dead = StartWith(h, "dead", kMiB, 1, {{"a"}, "", 0, false});
  REQUIRE(dead.ok());
  CHECK(SegmentsOf(dead->replicas[0]) == std::set<std::string>{"b"});
}

TEST_CASE("segments on the preferred host are tried first") {
  Harness h;
  REQUIRE(h.Mount(1, "a", 16 * kMiB).ok());
  REQUIRE(h.Mount(1, "b", 16 * kMiB).ok());
  REQUIRE(h.Put("fill", 4 * kMiB).ok());
  const std::string fuller = SegmentsOf(h.Get("fill")->replicas[0]).count("a") ? "a" : "b";
  auto r = StartWith(h, "k", kMiB, 1, {{}, "host-" + fuller, 0, false});
  REQUIRE(r.ok());
  CHECK(SegmentsOf(r->replicas[0]) == std::set<std::string>{fuller});
}

TEST_CASE("a put's own soft-pin TTL replaces the default") {
  Harness h;
  REQUIRE(h.Mount(1, "a", 16 * kMiB).ok());
  REQUIRE(StartWith(h, "short", kMiB, 1, {{}, "", 2000, false}, true).ok());
  REQUIRE(h.End("short").ok());
  CHECK(h.state->counters().soft_pinned_count == 1);
  h.Advance(3 * kSecond);
  CHECK(h.Tick().expired_pins == 1);
  CHECK(h.state->counters().soft_pinned_count == 0);
}

TEST_CASE("hard-pinned objects are never evicted, even when puts then fail") {
  Harness h;
  REQUIRE(h.Mount(1, "a", 4 * kMiB).ok());
  for (int i = 0; i < 3; ++i) {
    const std::string k = "hard" + std::to_string(i);
    REQUIRE(StartWith(h, k, kMiB, 1, {{}, "", 0, true}).ok());
    REQUIRE(h.End(k).ok());
  }
  REQUIRE(h.Put("soft", kMiB, 1, true).ok());
  REQUIRE(h.Put("x", kMiB).ok());  // evicts the soft pin, never a hard one
  CHECK(h.listener.evicted == std::vector<std::string>{"soft"});
  CHECK(h.Start("no-room", 2 * kMiB).code() == ErrorCode::NO_AVAILABLE_HANDLE);
  h.Advance(h.config.default_kv_soft_pin_ttl_us * 2);
  CHECK(h.Tick().expired_pins == 0);
  for (int i = 0; i < 3; ++i) CHECK(h.Exists("hard" + std::to_string(i)));
}

}  // namespace
}  // namespace mc::master

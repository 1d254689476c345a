// Issue 33 in the core: a forced removal keeps a leased object's space
// until the lease (and so every read grant handed out with it) ends; a
// version's generation changes with every new version; direct reads'
// reported hits count for eviction.
#include <doctest/doctest.h>

#include "master/master_test_util.h"

using namespace mc;
using namespace mc::master;
using namespace mc::master::testing;

TEST_CASE("a forced removal keeps a leased object's space from other objects until its lease ends") {
  Options o;
  o.default_kv_lease_ttl_us = 5000000;
  Harness h(o);
  REQUIRE(h.Mount(1, "s1", 64 << 10).ok());
  REQUIRE(h.Put("a", 64 << 10).ok());
  auto read = h.Get("a");  // a reader holds the lease and its grant
  REQUIRE(read.ok());
  REQUIRE(h.state->Remove({"a", true}, h.now_us).ok());
  // The whole segment held "a": nothing else fits while the grant may be used.
  CHECK(h.Start("b", 64 << 10).code() == ErrorCode::NO_AVAILABLE_HANDLE);
  CHECK(h.state->retired_bytes() == 64u << 10);
  h.Advance(5000001);
  h.Tick();
  CHECK(h.state->retired_bytes() == 0);
  CHECK(h.Put("b", 64 << 10).ok());
}

TEST_CASE("remove_all with force keeps leased space until the leases end, unleased space not") {
  Options o;
  o.default_kv_lease_ttl_us = 5000000;
  Harness h(o);
  REQUIRE(h.Mount(1, "s1", 64 << 10).ok());
  REQUIRE(h.Put("leased", 32 << 10).ok());
  REQUIRE(h.Put("idle", 32 << 10).ok());
  REQUIRE(h.Get("leased").ok());
  CHECK(h.state->RemoveAll(h.now_us, true).removed == 2);
  CHECK(h.state->retired_bytes() == 32u << 10);
  CHECK(h.Start("whole", 64 << 10).code() == ErrorCode::NO_AVAILABLE_HANDLE);
  CHECK(h.Put("c", 32 << 10).ok());  // the unleased half is free at once
}

TEST_CASE("each version of a key gets its own generation") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 1 << 20).ok());
  REQUIRE(h.Put("k", 4096).ok());
  const uint64_t g1 = h.Get("k").value().generation;
  CHECK(h.Get("k").value().generation == g1);
  REQUIRE(h.state->Remove({"k", true}, h.now_us).ok());
  REQUIRE(h.Put("k", 4096).ok());
  const uint64_t g2 = h.Get("k").value().generation;
  CHECK(g2 != g1);
  msg::PutStartRequest up{Client(1), "k", 4096, {}};
  up.options.upsert = true;
  REQUIRE(h.state->UpsertStart(up, h.now_us).ok());
  REQUIRE(h.End("k").ok());
  const uint64_t g3 = h.Get("k").value().generation;
  CHECK(g3 != g2);
  CHECK(g3 != g1);
}

TEST_CASE("reported direct-read hits keep a key from being the next victim") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 16 << 10).ok());
  REQUIRE(h.Put("old", 8 << 10).ok());
  REQUIRE(h.Put("new", 8 << 10).ok());
  // Exact LRU would evict "old" next; its hits came from a client's cache.
  msg::AccessReport report{Client(2), {{"old", 3}, {"missing", 1}}};
  CHECK(h.state->ReportAccesses(report, h.now_us) == 1);
  REQUIRE(h.Put("third", 8 << 10).ok());  // evicts one
  CHECK(h.Exists("old"));
  CHECK_FALSE(h.Exists("new"));
}

// A removed or replaced version's space comes back once its readers
// released their reads, before its lease's deadline (master_state_held.cc).
#include <doctest/doctest.h>

#include "master/master_state.h"
#include "master/master_test_util.h"

using namespace mc;
using namespace mc::master;
using namespace mc::master::testing;

namespace {
constexpr uint64_t kSecond = 1000000;

Result<msg::GetReplicaListReply> Read(Harness& h, uint64_t client, const std::string& key) {
  return h.state->GetReplicaList({Client(client), key}, h.now_us);
}
void Release(Harness& h, uint64_t client, const std::string& key) {
  h.state->ReleaseLeases({{Client(client), key}}, h.now_us);
}
uint64_t OffsetOf(const msg::GetReplicaListReply& r) {
  return r.replicas.at(0).buffers.at(0).offset;
}
uint64_t OffsetOf(const msg::PutStartReply& r) { return r.replicas.at(0).buffers.at(0).offset; }
}  // namespace

TEST_CASE("a forced removal's space comes back once every reader released its read") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 2048).ok());  // room for two objects
  REQUIRE(h.Put("k", 1024).ok());
  const uint64_t old_offset = OffsetOf(*Read(h, 7, "k"));
  REQUIRE(Read(h, 8, "k").ok());
  REQUIRE(Read(h, 8, "k").ok());  // two reads of one client
  REQUIRE(h.state->Remove({"k", true}, h.now_us).ok());
  CHECK(h.state->retired_bytes() == 1024);
  h.now_us += kSecond;
  Release(h, 7, "k");
  Release(h, 8, "k");
  CHECK(h.state->retired_bytes() == 1024);  // one of client 8's reads is still out
  Release(h, 9, "k");                       // never read it: counts for nothing
  CHECK(h.state->retired_bytes() == 1024);
  Release(h, 8, "k");
  CHECK(h.state->retired_bytes() == 0);
  // Long before the lease's deadline the space is handed out again.
  REQUIRE(h.Put("a", 1024).ok());
  auto b = h.Start("b", 1024);
  REQUIRE(b.ok());
  CHECK((OffsetOf(*b) == old_offset || OffsetOf(*h.Get("a")) == old_offset));
  REQUIRE(h.End("b").ok());
  Release(h, 8, "k");  // a release too many changes nothing
  h.Advance(h.config.default_kv_lease_ttl_us);
  h.Tick();  // the deadline's entry finds nothing left to free
  CHECK(h.state->retired_bytes() == 0);
}

TEST_CASE("an upsert's old version is freed when its readers release") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 64 << 20).ok());
  REQUIRE(h.Put("k", 1000).ok());
  REQUIRE(Read(h, 7, "k").ok());
  REQUIRE(h.state->UpsertStart({Client(1), "k", 1000, {1, false}}, h.now_us).ok());
  REQUIRE(h.End("k").ok());
  CHECK(h.state->retired_bytes() == 1024);
  Release(h, 7, "k");
  CHECK(h.state->retired_bytes() == 0);
  // (Without the release it waits for the deadline: master_state_ops_test.)
}

TEST_CASE("a reader that also read the key's next version keeps the removed one until its deadline") {
  // Its release names only the key: it may be of either version, so it
  // frees neither, and the new version's lease ends by time alone.
  Harness h;
  REQUIRE(h.Mount(1, "s1", 64 << 20).ok());
  REQUIRE(h.Put("k", 1000).ok());
  REQUIRE(Read(h, 7, "k").ok());
  REQUIRE(h.state->Remove({"k", true}, h.now_us).ok());
  REQUIRE(h.Put("k", 1000).ok());
  REQUIRE(Read(h, 7, "k").ok());  // the new version, the old read still out
  REQUIRE(Read(h, 8, "k").ok());
  Release(h, 7, "k");
  Release(h, 8, "k");
  CHECK(h.state->retired_bytes() == 1024);
  CHECK(h.state->Remove({"k", false}, h.now_us).code() == ErrorCode::OBJECT_HAS_LEASE);
  Release(h, 7, "k");
  CHECK(h.state->retired_bytes() == 1024);
  CHECK(h.state->Remove({"k", false}, h.now_us).code() == ErrorCode::OBJECT_HAS_LEASE);
  h.Advance(h.config.default_kv_lease_ttl_us);
  h.Tick();
  CHECK(h.state->retired_bytes() == 0);
  CHECK(h.state->Remove({"k", false}, h.now_us).ok());
}

TEST_CASE("a removed version leased by ExistKey alone is freed at once") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 64 << 20).ok());
  REQUIRE(h.Put("k", 1000).ok());
  REQUIRE(h.Exists("k"));
  REQUIRE(h.state->Remove({"k", true}, h.now_us).ok());
  CHECK(h.state->retired_bytes() == 0);
}

TEST_CASE("a reader whose client the master expired keeps its removed version until the deadline") {
  // Expiry means it stopped pinging, not that it stopped reading: its read
  // grant stays valid at the store until the lease's deadline.
  Options o;
  o.client_ttl_us = 2 * kSecond;
  Harness h(o);
  h.live = {1, 7};
  REQUIRE(h.Mount(1, "s1", 64 << 20).ok());
  h.Ping(7);
  REQUIRE(h.Put("k", 1000).ok());
  REQUIRE(Read(h, 7, "k").ok());
  REQUIRE(h.state->Remove({"k", true}, h.now_us).ok());
  h.live = {1};
  h.Advance(3 * kSecond);
  CHECK(h.Tick().expired_clients == 1);
  CHECK(h.state->retired_bytes() == 1024);
  h.Advance(h.config.default_kv_lease_ttl_us);
  h.Tick();
  CHECK(h.state->retired_bytes() == 0);
}

TEST_CASE("a held version's buffers leave with their segment and a later release frees nothing") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 64 << 20).ok());
  REQUIRE(h.Mount(1, "s2", 64 << 20).ok());
  REQUIRE(h.Put("k", 1000, 2).ok());  // a replica on each
  REQUIRE(Read(h, 7, "k").ok());
  REQUIRE(h.state->Remove({"k", true}, h.now_us).ok());
  CHECK(h.state->retired_bytes() == 2048);
  REQUIRE(h.state->UnmountSegment({Client(1), "s1"}, h.now_us).ok());
  CHECK(h.state->retired_bytes() == 1024);
  REQUIRE(h.Mount(1, "s3", 64 << 20).ok());  // may take s1's id
  REQUIRE(h.Put("j", 1000, 2).ok());
  Release(h, 7, "k");
  CHECK(h.state->retired_bytes() == 0);
  CHECK(h.state->ClusterStatus(h.now_us).used_bytes == 2048);  // j's two replicas
}

#include "master/master_state.h"

#include <doctest/doctest.h>

#include "master/master_test_util.h"

using namespace mc;
using namespace mc::master;
using namespace mc::master::testing;

namespace {
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kSecond = 1000000;
}  // namespace

TEST_CASE("a put becomes readable only after PutEnd and the key cannot be put twice") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 64 * kMiB).ok());
  auto started = h.Start("k", 1000);
  REQUIRE(started.ok());
  REQUIRE(started->replicas.size() == 1);
  CHECK(started->replicas[0].status == msg::ReplicaStatus::kProcessing);
  CHECK(h.Get("k").code() == ErrorCode::REPLICA_IS_NOT_READY);
  CHECK_FALSE(h.Exists("k"));
  CHECK(h.Start("k", 1000).code() == ErrorCode::OBJECT_ALREADY_EXISTS);
  REQUIRE(h.End("k").ok());
  CHECK(h.End("k").ok());  // a retried PutEnd
  auto got = h.Get("k");
  REQUIRE(got.ok());
  CHECK(got->size_bytes == 1000);
  CHECK(got->lease_ttl_us == h.config.default_kv_lease_ttl_us);
  CHECK(got->replicas[0].status == msg::ReplicaStatus::kComplete);
  CHECK(got->replicas[0].buffers[0].endpoint == "10.0.0.1:s1");
  CHECK(h.Exists("k"));
  CHECK(h.Get("nope").code() == ErrorCode::OBJECT_NOT_FOUND);
  CHECK(h.Get("nope").status().message().find("'nope'") != std::string::npos);
  CHECK(h.state->PutRevoke({Client(1), "k"}, h.now_us).code() == ErrorCode::INVALID_WRITE);
  CHECK(h.listener.committed == std::vector<std::string>{"k"});
}

TEST_CASE("only the client that started a put may end or revoke it") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 64 * kMiB).ok());
  REQUIRE(h.Start("k", 1000).ok());  // started by Client(1)
  Status end = h.state->PutEnd({Client(2), "k"}, h.now_us);
  CHECK(end.code() == ErrorCode::INVALID_WRITE);
  CHECK(end.message().find("'k'") != std::string::npos);
  CHECK(h.state->BatchPutEnd({{Client(2), "k"}}, h.now_us)->at(0).code() ==
        ErrorCode::INVALID_WRITE);
  CHECK(h.state->PutRevoke({Client(2), "k"}, h.now_us).code() == ErrorCode::INVALID_WRITE);
  CHECK(h.Get("k").code() == ErrorCode::REPLICA_IS_NOT_READY);  // still in flight
  REQUIRE(h.End("k").ok());
  CHECK(h.state->PutEnd({Client(2), "k"}, h.now_us).ok());  // a retried end of a done put
  // Ownership ends with the put: a new put in the freed slot has its own owner.
  REQUIRE(h.Start("r", 1000).ok());
  REQUIRE(h.state->PutRevoke({Client(1), "r"}, h.now_us).ok());
  REQUIRE(h.state->PutStart({Client(3), "r", 1000, {1, false}}, h.now_us).ok());
  CHECK(h.state->PutEnd({Client(1), "r"}, h.now_us).code() == ErrorCode::INVALID_WRITE);
  CHECK(h.state->PutEnd({Client(3), "r"}, h.now_us).ok());
}

TEST_CASE("malformed puts are refused with INVALID_PARAMS or INVALID_KEY") {
  Options c;
  c.max_key_bytes = 8;
  Harness h(c);
  REQUIRE(h.Mount(1, "s1", 64 * kMiB).ok());
  CHECK(h.Start("k", 0).code() == ErrorCode::INVALID_PARAMS);
  CHECK(h.Start("k", 10, 0).code() == ErrorCode::INVALID_PARAMS);
  CHECK(h.Start("k", 10, kMaxReplicas + 1).code() == ErrorCode::INVALID_PARAMS);
  CHECK(h.Start("123456789", 10).code() == ErrorCode::INVALID_PARAMS);
  CHECK(h.Start("", 10).code() == ErrorCode::INVALID_KEY);
  CHECK(h.Start("k", 10, 2).code() == ErrorCode::NO_AVAILABLE_HANDLE);  // one segment only
  CHECK(h.Start("k", 65 * kMiB).code() == ErrorCode::NO_AVAILABLE_HANDLE);
  // Past what a record holds: refused before any placement, not truncated.
  CHECK(h.Start("k", ObjectRecord::kMaxSizeBytes + 1).code() == ErrorCode::INVALID_PARAMS);
  CHECK(h.state->counters().put_start.failures == 8);
}

TEST_CASE("replicas land on distinct segments, emptiest segments first") {
  Harness h;
  for (int i = 0; i < 4; ++i) REQUIRE(h.Mount(i + 1, "s" + std::to_string(i), 64 * kMiB).ok());
  REQUIRE(h.Put("fill2", 8 * kMiB).ok());  // goes to s0 (tie: lowest id)
  auto r = h.Start("k", 4096, 3);
  REQUIRE(r.ok());
  std::set<std::string> all;
  for (auto& rep : r->replicas) {
    auto segs = SegmentsOf(rep);
    REQUIRE(segs.size() == 1);
    all.insert(*segs.begin());
  }
  CHECK(all == std::set<std::string>{"s1", "s2", "s3"});  // s0 is the fullest
}

TEST_CASE("objects larger than the stripe size are striped across segments in object order") {
  Options c;
  c.stripe_size_bytes = 1 * kMiB;
  Harness h(c);
  for (int i = 0; i < 4; ++i) REQUIRE(h.Mount(i + 1, "s" + std::to_string(i), 64 * kMiB).ok());
  const uint64_t size = 3 * kMiB + 100;
  auto r = h.Start("big", size, 2);
  REQUIRE(r.ok());
  REQUIRE(r->replicas.size() == 2);
  std::set<std::string> seen;
  for (auto& rep : r->replicas) {
    REQUIRE(rep.buffers.size() == 4);
    uint64_t total = 0;
    for (size_t i = 0; i < rep.buffers.size(); ++i) {
      CHECK(rep.buffers[i].size_bytes == (i < 3 ? kMiB : 100));
      total += rep.buffers[i].size_bytes;
    }
    CHECK(total == size);
    auto segs = SegmentsOf(rep);
    CHECK(segs.size() == 2);  // each replica spreads over its two segments
    for (auto& s : segs) CHECK(seen.insert(s).second);  // replicas never share one
  }
  REQUIRE(h.End("big").ok());
  auto got = h.Get("big");
  REQUIRE(got.ok());
  CHECK(got->replicas[0].buffers.size() == 4);
  CHECK(h.state->DumpObjects(true)[0].replicas[1].size() == 4);
}

namespace {
// A get's lease by `client`; its release.
bool Read(Harness& h, uint64_t client, const std::string& key) {
  return h.state->GetReplicaList({Client(client), key}, h.now_us).ok();
}
void Done(Harness& h, uint64_t client, const std::string& key) {
  h.state->ReleaseLeases({{Client(client), key}}, h.now_us);
}
// Leased: a remove without force is refused (and changes nothing).
bool Leased(Harness& h, const std::string& key) {
  return h.state->Remove({key, false}, h.now_us).code() == ErrorCode::OBJECT_HAS_LEASE;
}
// One 64 MiB segment holding a 1 MiB object under each of `keys`.
struct PoolOf : Harness {
  explicit PoolOf(std::initializer_list<const char*> keys) {
    REQUIRE(Mount(1, "s1", 64 * kMiB).ok());
    for (const char* k : keys) REQUIRE(Put(k, kMiB).ok());
  }
};
}  // namespace

TEST_CASE("a released read ends its lease at once, so the object can be evicted") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 4 * kMiB).ok());
  REQUIRE(h.Put("a", 2 * kMiB).ok());
  REQUIRE(Read(h, 1, "a"));
  CHECK(h.state->tracked_reads() == 1);
  CHECK(h.Start("b", 3 * kMiB).code() == ErrorCode::NO_AVAILABLE_HANDLE);  // a is leased
  Done(h, 1, "a");
  CHECK(h.state->tracked_reads() == 0);
  REQUIRE(h.Start("b", 3 * kMiB).ok());  // no time passed
  CHECK(h.listener.evicted == std::vector<std::string>{"a"});
}

TEST_CASE("a lease with several reads ends only when the last of them is released") {
  PoolOf h({"k"});
  REQUIRE(Read(h, 1, "k"));
  REQUIRE(Read(h, 2, "k"));
  REQUIRE(Read(h, 2, "k"));  // the same client twice: two reads
  Done(h, 1, "k");
  Done(h, 1, "k");  // a second release of one read counts for nothing
  Done(h, 3, "k");  // nor does one by a client that never read
  Done(h, 2, "nope");
  CHECK(Leased(h, "k"));
  CHECK(h.state->counters().released_reads == 1);  // client 1's, once
  Done(h, 2, "k");
  CHECK(Leased(h, "k"));
  CHECK(h.state->counters().leases_ended_by_release == 0);
  Done(h, 2, "k");
  CHECK_FALSE(Leased(h, "k"));  // and the remove went through
  CHECK(h.state->counters().released_reads == 3);
  CHECK(h.state->counters().leases_ended_by_release == 1);
}

TEST_CASE("a release that comes after its own lease ran out never ends a newer read's lease") {
  PoolOf h({"k"});
  REQUIRE(Read(h, 1, "k"));
  h.Advance(h.config.default_kv_lease_ttl_us);  // client 1's lease is over
  REQUIRE(Read(h, 2, "k"));                     // a new lease
  Done(h, 1, "k");                              // late
  CHECK(Leased(h, "k"));
  // Client 1 reads again within client 2's lease: both count.
  h.Advance(1);
  REQUIRE(Read(h, 1, "k"));
  Done(h, 2, "k");
  CHECK(Leased(h, "k"));
  Done(h, 1, "k");
  CHECK_FALSE(Leased(h, "k"));
}

TEST_CASE("ExistKey's lease ends with the released get, or by time alone") {
  PoolOf h({"e", "g"});
  REQUIRE(h.Exists("e"));
  Done(h, 1, "e");  // nothing to release: ExistKey is not a read of bytes
  CHECK(Leased(h, "e"));
  REQUIRE(h.Exists("g"));
  REQUIRE(Read(h, 1, "g"));
  Done(h, 1, "g");
  CHECK_FALSE(Leased(h, "g"));
}

TEST_CASE("past the reads an object can count, its lease ends by time only") {
  PoolOf h({"k"});
  const uint64_t readers = ObjectRecord::kReadersUnknown + 2;
  for (uint64_t c = 1; c <= readers; ++c) REQUIRE(Read(h, c, "k"));
  for (uint64_t c = 1; c <= readers; ++c) Done(h, c, "k");
  CHECK(Leased(h, "k"));
  CHECK(h.state->tracked_reads() == 0);
  h.Advance(h.config.default_kv_lease_ttl_us);
  CHECK_FALSE(Leased(h, "k"));
}

TEST_CASE("reads never released are forgotten once their lease is over") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 64 * kMiB).ok());
  for (int i = 0; i < 100; ++i) {
    const std::string key = "k" + std::to_string(i);
    REQUIRE(h.Put(key, 4096).ok());
    REQUIRE(Read(h, 1, key));
  }
  CHECK(h.state->tracked_reads() == 100);
  h.Tick();
  CHECK(h.state->tracked_reads() == 100);  // still leased
  h.Advance(h.config.default_kv_lease_ttl_us);
  for (int t = 0; t < 64 && h.state->tracked_reads() > 0; ++t) h.Tick();
  CHECK(h.state->tracked_reads() == 0);
}

TEST_CASE("a lease blocks remove and eviction until it expires") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 4 * kMiB).ok());
  REQUIRE(h.Put("a", 2 * kMiB).ok());
  REQUIRE(h.Get("a").ok());
  CHECK(h.state->Remove({"a", false}, h.now_us).code() == ErrorCode::OBJECT_HAS_LEASE);
  // Needs a's space, which is leased: nothing evictable.
  CHECK(h.Start("b", 3 * kMiB).code() == ErrorCode::NO_AVAILABLE_HANDLE);
  h.Advance(h.config.default_kv_lease_ttl_us - 1);
  CHECK(h.Start("b", 3 * kMiB).code() == ErrorCode::NO_AVAILABLE_HANDLE);
  h.Advance(1);
  REQUIRE(h.Start("b", 3 * kMiB).ok());  // the lease ended: a is evicted
  CHECK(h.listener.evicted == std::vector<std::string>{"a"});
  REQUIRE(h.End("b").ok());
  REQUIRE(h.Exists("b"));  // ExistKey leases too
  CHECK(h.state->Remove({"b", false}, h.now_us).code() == ErrorCode::OBJECT_HAS_LEASE);
  CHECK(h.state->Remove({"b", true}, h.now_us).ok());
  CHECK(h.state->Remove({"b", true}, h.now_us).code() == ErrorCode::OBJECT_NOT_FOUND);
}

TEST_CASE("unpinned objects are evicted before pinned ones, and pins expire") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 4 * kMiB).ok());
  REQUIRE(h.Put("pinned-old", kMiB, 1, true).ok());
  REQUIRE(h.Put("plain-1", kMiB).ok());
  REQUIRE(h.Put("plain-2", kMiB).ok());
  REQUIRE(h.Put("pinned-new", kMiB, 1, true).ok());
  CHECK(h.state->counters().soft_pinned_count == 2);
  REQUIRE(h.Put("x", 2 * kMiB).ok());
  CHECK(h.listener.evicted == std::vector<std::string>{"plain-1", "plain-2"});
  REQUIRE(h.Get("x").ok());
  REQUIRE(h.Put("y", kMiB).ok());  // x is leased: only pinned ones are left to evict
  CHECK(h.listener.evicted.back() == "pinned-old");
  CHECK(h.state->counters().soft_pinned_count == 1);
  auto listed = h.state->ListKeys({"pinned", 10, ""}, h.now_us);
  REQUIRE(listed->keys.size() == 1);
  CHECK(listed->keys[0].soft_pinned);
  // Puts have been evicting for themselves: the next tick leaves the pool be.
  CHECK(h.Tick().evicted_keys == 0);
  h.Advance(h.config.default_kv_soft_pin_ttl_us + 1);
  auto report = h.Tick();
  CHECK(report.expired_pins == 1);
  CHECK(h.state->counters().soft_pinned_count == 0);
  // The pool is above the watermark; the once-pinned object is now the
  // least recently used ordinary object, so it goes first.
  CHECK(report.evicted_keys == 1);
  CHECK(h.listener.evicted.back() == "pinned-new");
}

TEST_CASE("reading a pinned object extends its pin") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 4 * kMiB).ok());
  REQUIRE(h.Put("p", kMiB, 1, true).ok());
  h.Advance(h.config.default_kv_soft_pin_ttl_us - kSecond);
  REQUIRE(h.Get("p").ok());
  h.Advance(2 * kSecond);
  CHECK(h.Tick().expired_pins == 0);
  CHECK(h.state->counters().soft_pinned_count == 1);
  h.Advance(h.config.default_kv_soft_pin_ttl_us);
  CHECK(h.Tick().expired_pins == 1);
}

TEST_CASE("a dead client's segments are unmounted and its lone replicas removed") {
  Harness h;
  REQUIRE(h.Mount(1, "alive", 64 * kMiB).ok());
  REQUIRE(h.Mount(2, "doomed", 64 * kMiB).ok());
  REQUIRE(h.Put("both", kMiB, 2).ok());
  REQUIRE(h.Put("x", 10 * kMiB).ok());     // alive (tie: lowest id)
  REQUIRE(h.Put("only", kMiB).ok());       // doomed, the emptier one
  REQUIRE(SegmentsOf(h.Get("only")->replicas[0]) == std::set<std::string>{"doomed"});
  // Client 2 stops pinging; until Tick notices, nothing new is placed there.
  h.Advance(h.config.client_ttl_us + 1);
  h.Ping(1);
  auto r = h.Start("new", kMiB);
  REQUIRE(r.ok());
  CHECK(SegmentsOf(r->replicas[0]) == std::set<std::string>{"alive"});
  CHECK(h.Start("two", kMiB, 2).code() == ErrorCode::NO_AVAILABLE_HANDLE);
  auto report = h.Tick();
  CHECK(report.expired_clients == 1);
  CHECK(report.unmounted_segments == 1);
  CHECK(h.Get("only").code() == ErrorCode::OBJECT_NOT_FOUND);  // leased, but its replica is gone
  auto both = h.Get("both");
  REQUIRE(both.ok());
  CHECK(both->replicas.size() == 1);
  CHECK(h.listener.lost == std::vector<std::string>{"only"});
  CHECK(h.listener.unmounted == std::vector<std::string>{"doomed"});
  CHECK(h.state->ClusterStatus(h.now_us).segments.size() == 1);
  msg::PingReply ping = h.state->Ping({Client(2)}, h.now_us);
  CHECK(ping.remount);
  // The reply to that ping may never arrive (a ping sent before a partition
  // and delivered after it, from a socket its store already closed): the
  // master keeps asking until the store mounts.
  CHECK(h.state->Ping({Client(2)}, h.now_us).remount);
  REQUIRE(h.Mount(2, "doomed", 64 * kMiB).ok());  // the store remounts
  CHECK_FALSE(h.state->Ping({Client(2)}, h.now_us).remount);
}

TEST_CASE("unmount drops replicas there and keeps objects with a surviving replica") {
  Harness h;
  REQUIRE(h.Mount(1, "a", 8 * kMiB).ok());
  REQUIRE(h.Mount(1, "b", 8 * kMiB).ok());
  REQUIRE(h.Put("two", kMiB, 2).ok());
  REQUIRE(h.Put("one", kMiB).ok());
  const std::string one_seg = *SegmentsOf(h.Get("one")->replicas[0]).begin();
  CHECK(h.state->UnmountSegment({Client(2), one_seg}, h.now_us).code() ==
        ErrorCode::ILLEGAL_CLIENT);
  REQUIRE(h.state->UnmountSegment({Client(1), one_seg}, h.now_us).ok());
  CHECK(h.Get("one").code() == ErrorCode::OBJECT_NOT_FOUND);
  REQUIRE(h.Get("two").ok());
  CHECK(h.Get("two")->replicas.size() == 1);
  CHECK(h.state->counters().allocated_bytes == kMiB);
  CHECK(h.state->UnmountSegment({Client(1), one_seg}, h.now_us).code() ==
        ErrorCode::SEGMENT_NOT_FOUND);
}

TEST_CASE("mount is idempotent for the same store and refuses a name taken by another") {
  Harness h;
  REQUIRE(h.Mount(1, "s", 8 * kMiB).ok());
  CHECK(h.Mount(1, "s", 8 * kMiB).ok());
  CHECK(h.Mount(2, "s", 8 * kMiB).code() == ErrorCode::SEGMENT_ALREADY_EXISTS);
  CHECK(h.Mount(1, "s", 16 * kMiB).code() == ErrorCode::SEGMENT_ALREADY_EXISTS);
  CHECK(h.Mount(1, "", 8 * kMiB).code() == ErrorCode::INVALID_PARAMS);
  CHECK(h.Mount(1, "tiny", 1).code() == ErrorCode::INVALID_PARAMS);
  CHECK(h.state->ClusterStatus(h.now_us).capacity_bytes == 8 * kMiB);
}

TEST_CASE("a put neither ended nor revoked is discarded after put_timeout") {
  Harness h;
  REQUIRE(h.Mount(1, "s", 8 * kMiB).ok());
  REQUIRE(h.Start("zombie", 4 * kMiB).ok());
  REQUIRE(h.Start("revoked", kMiB).ok());
  REQUIRE(h.state->PutRevoke({Client(1), "revoked"}, h.now_us).ok());
  CHECK(h.state->counters().allocated_bytes == 4 * kMiB);
  h.Advance(h.config.put_timeout_us - 1);
  CHECK(h.Tick().discarded_puts == 0);
  h.Advance(1);
  CHECK(h.Tick().discarded_puts == 1);
  CHECK(h.state->counters().allocated_bytes == 0);
  CHECK(h.End("zombie").code() == ErrorCode::OBJECT_NOT_FOUND);
  CHECK(h.listener.removed.empty());  // in-flight puts were never durable
}

TEST_CASE("a full pool evicts synchronously and fails only when nothing is evictable") {
  Harness h;
  REQUIRE(h.Mount(1, "a", 16 * kMiB).ok());
  REQUIRE(h.Mount(2, "b", 16 * kMiB).ok());
  for (int i = 0; i < 32; ++i) REQUIRE(h.Put("k" + std::to_string(i), kMiB).ok());
  CHECK(h.state->counters().allocated_bytes == 32 * kMiB);
  REQUIRE(h.Put("big", 8 * kMiB, 2).ok());  // needs 8 MiB holes on both segments
  CHECK(h.state->counters().evicted_keys >= 16);
  CHECK(h.state->counters().successful_evictions == 1);
  CHECK(h.state->counters().allocated_bytes == 32 * kMiB);
  // Lease everything that is left: nothing is evictable.
  auto listed = h.state->ListKeys({"", 100, ""}, h.now_us);
  for (auto& k : listed->keys) REQUIRE(h.Get(k.key).ok());
  CHECK(h.Start("wont-fit", kMiB).code() == ErrorCode::NO_AVAILABLE_HANDLE);
  h.Advance(h.config.default_kv_lease_ttl_us);
  CHECK(h.Start("fits", kMiB).ok());
}

TEST_CASE("in-flight puts are never evicted") {
  Harness h;
  REQUIRE(h.Mount(1, "s", 4 * kMiB).ok());
  REQUIRE(h.Start("inflight", 3 * kMiB).ok());
  REQUIRE(h.Put("done", kMiB).ok());
  CHECK(h.Start("more", 2 * kMiB).code() == ErrorCode::NO_AVAILABLE_HANDLE);
  CHECK(h.state->counters().evicted_keys == 1);  // "done" went, and it was not enough
  CHECK(h.Get("inflight").code() == ErrorCode::REPLICA_IS_NOT_READY);
}

TEST_CASE("eviction keeps going until some segment has a contiguous hole") {
  Harness h;
  REQUIRE(h.Mount(1, "s", 8 * kMiB).ok());
  // Alternate old and new objects so freeing only old ones leaves 1 MiB holes.
  for (int i = 0; i < 8; ++i) REQUIRE(h.Put("k" + std::to_string(i), kMiB).ok());
  for (int i = 1; i < 8; i += 2) REQUIRE(h.Get("k" + std::to_string(i)).ok());
  h.Advance(h.config.default_kv_lease_ttl_us);  // leases gone, LRU order kept
  REQUIRE(h.Put("wide", 3 * kMiB).ok());
  CHECK(h.state->counters().allocated_bytes <= 8 * kMiB);
}

TEST_CASE("ListKeys pages through keys in order and resumes after changes") {
  Harness h;
  REQUIRE(h.Mount(1, "s", 64 * kMiB).ok());
  for (int i = 0; i < 25; ++i) {
    char key[16];
    std::snprintf(key, sizeof key, "p/%02d", i);
    REQUIRE(h.Put(key, 100).ok());
  }
  REQUIRE(h.Put("q/other", 100).ok());
  REQUIRE(h.Start("p/inflight", 100).ok());
  auto page1 = h.state->ListKeys({"p/", 10, ""}, h.now_us);
  REQUIRE(page1.ok());
  REQUIRE(page1->keys.size() == 10);
  CHECK(page1->keys.front().key == "p/00");
  CHECK(page1->next_cursor == "p/09");
  REQUIRE(h.state->Remove({"p/10", false}, h.now_us).ok());  // changes between pages
  REQUIRE(h.Put("p/095", 100).ok());
  auto page2 = h.state->ListKeys({"p/", 10, page1->next_cursor}, h.now_us);
  CHECK(page2->keys.front().key == "p/095");
  CHECK(page2->keys[1].key == "p/11");
  auto page3 = h.state->ListKeys({"p/", 10, page2->next_cursor}, h.now_us);
  CHECK(page3->keys.size() == 5);
  CHECK(page3->keys.back().key == "p/24");
  CHECK(page3->next_cursor.empty());
  CHECK(h.state->ListKeys({"", 0, ""}, h.now_us).code() == ErrorCode::INVALID_PARAMS);
}

TEST_CASE("batch forms answer every item in order") {
  Options c;
  c.max_batch = 4;
  Harness h(c);
  REQUIRE(h.Mount(1, "s", 8 * kMiB).ok());
  REQUIRE(h.Put("dup", 10).ok());
  std::vector<msg::PutStartRequest> starts = {
      {Client(1), "a", 10, {}}, {Client(1), "dup", 10, {}}, {Client(1), "b", 0, {}}};
  auto started = h.state->BatchPutStart(starts, h.now_us);
  REQUIRE(started.ok());
  CHECK(started->at(0).status.ok());
  CHECK(started->at(0).value.replicas.size() == 1);
  CHECK(started->at(1).status.code() == ErrorCode::OBJECT_ALREADY_EXISTS);
  CHECK(started->at(2).status.code() == ErrorCode::INVALID_PARAMS);
  std::vector<msg::KeyRequest> keys = {{Client(1), "a"}, {Client(1), "missing"}};
  auto ended = h.state->BatchPutEnd(keys, h.now_us);
  CHECK(ended->at(0).ok());
  CHECK(ended->at(1).code() == ErrorCode::OBJECT_NOT_FOUND);
  auto got = h.state->BatchGetReplicaList(keys, h.now_us);
  CHECK(got->at(0).value.size_bytes == 10);
  CHECK(got->at(1).status.code() == ErrorCode::OBJECT_NOT_FOUND);
  auto exist = h.state->BatchExistKey(keys, h.now_us);
  CHECK(exist->at(0).value);
  CHECK_FALSE(exist->at(1).value);
  auto revoked = h.state->BatchPutRevoke(keys, h.now_us);
  CHECK(revoked->at(0).code() == ErrorCode::INVALID_WRITE);
  std::vector<msg::KeyRequest> too_many(5, {Client(1), "a"});
  CHECK(h.state->BatchExistKey(too_many, h.now_us).code() == ErrorCode::INVALID_PARAMS);
  auto counters = h.state->counters();
  CHECK(counters.batch_put_start.requests == 1);
  CHECK(counters.batch_put_start.failures == 1);
  CHECK(counters.put_start.requests == 4);
}

TEST_CASE("background eviction frees back down to the watermark, at most eviction_ratio a tick") {
  Harness h;
  REQUIRE(h.Mount(1, "s", 100 * kMiB).ok());
  for (int i = 0; i < 93; ++i) REQUIRE(h.Put("k" + std::to_string(i), kMiB).ok());
  CHECK(h.Tick().evicted_keys == 3);  // down to the 90% watermark, no further
  CHECK(h.state->counters().allocated_bytes == 90 * kMiB);
  CHECK(h.Tick().evicted_keys == 0);
  CHECK(h.listener.evicted.front() == "k0");
  // A full pool: one tick frees at most eviction_ratio (5%); puts that outrun
  // the tick evict for themselves.
  for (int i = 93; i < 103; ++i) REQUIRE(h.Put("k" + std::to_string(i), kMiB).ok());
  CHECK(h.state->counters().allocated_bytes == 100 * kMiB);
  CHECK(h.Tick().evicted_keys == 5);
  CHECK(h.Tick().evicted_keys == 5);
  CHECK(h.state->counters().allocated_bytes == 90 * kMiB);
  CHECK(h.Tick().evicted_keys == 0);
}

TEST_CASE("background eviction stands aside while puts evict for themselves") {
  Harness h;
  REQUIRE(h.Mount(1, "s", 100 * kMiB).ok());
  for (int i = 0; i < 105; ++i) REQUIRE(h.Put("k" + std::to_string(i), kMiB).ok());
  CHECK(h.state->counters().evicted_keys == 5);  // the last 5 puts made room
  CHECK(h.state->counters().allocated_bytes == 100 * kMiB);
  // Those puts outran the headroom a round would keep, so this tick frees
  // nothing early...
  CHECK(h.Tick().evicted_keys == 0);
  // ...and once a tick passes with no put evicting, the rounds resume.
  CHECK(h.Tick().evicted_keys == 5);
  // A put that fits does not count: the rounds go on to the watermark.
  REQUIRE(h.Put("k105", kMiB).ok());
  CHECK(h.Tick().evicted_keys == 5);
  CHECK(h.Tick().evicted_keys == 1);
  CHECK(h.state->counters().allocated_bytes == 90 * kMiB);
}

TEST_CASE("RemoveAll removes every complete unleased object") {
  Harness h;
  REQUIRE(h.Mount(1, "s", 8 * kMiB).ok());
  REQUIRE(h.Put("a", 10).ok());
  REQUIRE(h.Put("b", 10).ok());
  REQUIRE(h.Start("c", 10).ok());
  REQUIRE(h.Get("b").ok());
  CHECK(h.state->RemoveAll(h.now_us).removed == 1);
  CHECK(h.state->counters().key_count == 2);
}

TEST_CASE("forced RemoveAll removes leased objects too but never one being written") {
  Harness h;
  REQUIRE(h.Mount(1, "s", 8 * kMiB).ok());
  REQUIRE(h.Put("a", 10).ok());
  REQUIRE(h.Put("b", 10).ok());
  REQUIRE(h.Start("c", 10).ok());
  REQUIRE(h.Get("b").ok());
  CHECK(h.state->RemoveAll(h.now_us, true).removed == 2);
  CHECK(h.state->counters().key_count == 1);  // "c", still with its writer
}

TEST_CASE("a bulk load in any key order serves in key order; a key loaded twice is refused by name") {
  Options c;
  Harness h(c);
  REQUIRE(h.Mount(1, "a", 16 * kMiB).ok());
  for (const char* key : {"m", "b", "zz", "a", "ma", "z"}) REQUIRE(h.Put(key, 100, 1).ok());
  std::vector<ObjectDump> dumped = h.state->DumpObjects(true);
  std::vector<ObjectDump> shuffled = {dumped[4], dumped[0], dumped[5], dumped[2], dumped[1],
                                      dumped[3]};
  Harness fresh(c);
  for (auto& s : h.state->DumpSegments()) REQUIRE(fresh.state->LoadSegment(s, fresh.now_us).ok());
  fresh.state->BeginBulkLoad();
  for (auto& o : shuffled) REQUIRE(fresh.state->LoadObject(o, fresh.now_us).ok());
  REQUIRE(fresh.state->FinishBulkLoad().ok());
  auto listed = fresh.state->ListKeys({"", 100, ""}, fresh.now_us);
  REQUIRE(listed.ok());
  std::vector<std::string> keys;
  for (const auto& k : listed->keys) keys.push_back(k.key);
  CHECK(keys == std::vector<std::string>{"a", "b", "m", "ma", "z", "zz"});
  CHECK(fresh.state->counters().key_count == 6);
  REQUIRE(fresh.Put("mb", 100, 1).ok());
  CHECK(fresh.Get("ma").ok());

  Harness twice(c);
  for (auto& s : h.state->DumpSegments()) REQUIRE(twice.state->LoadSegment(s, twice.now_us).ok());
  twice.state->BeginBulkLoad();
  ObjectDump again = dumped[1];
  REQUIRE(twice.state->LoadObject(dumped[1], twice.now_us).ok());
  again.replicas[0][0].offset += 4096;  // elsewhere, so only the key clashes
  REQUIRE(twice.state->LoadObject(again, twice.now_us).ok());
  Status st = twice.state->FinishBulkLoad();
  CHECK(st.code() == ErrorCode::OBJECT_ALREADY_EXISTS);
  CHECK(st.message() == "cannot load '" + dumped[1].key + "': it is loaded twice");
  twice.state.reset();  // after a failed FinishBulkLoad the state is discarded
}

TEST_CASE("owners of loaded segments are judged from the end of a load that outlasts client_ttl") {
  Harness h;
  REQUIRE(h.Mount(1, "a", 16 * kMiB).ok());
  REQUIRE(h.Put("k", 100).ok());
  for (bool restarted : {false, true}) {
    Harness fresh;
    for (auto& s : h.state->DumpSegments()) REQUIRE(fresh.state->LoadSegment(s, fresh.now_us).ok());
    fresh.state->BeginBulkLoad();
    for (auto& o : h.state->DumpObjects(true)) REQUIRE(fresh.state->LoadObject(o, fresh.now_us).ok());
    REQUIRE(fresh.state->FinishBulkLoad().ok());
    fresh.now_us += fresh.config.client_ttl_us + 1;  // the load took that long
    if (restarted) fresh.state->RestartClientClocks(fresh.now_us);
    CHECK(fresh.Tick().expired_clients == (restarted ? 0u : 1u));
    CHECK(fresh.Exists("k") == restarted);
  }
}

TEST_CASE("state dumped and loaded into a fresh master matches and new puts never overlap") {
  Options c;
  c.stripe_size_bytes = kMiB;
  Harness h(c);
  REQUIRE(h.Mount(1, "a", 16 * kMiB).ok());
  REQUIRE(h.Mount(2, "b", 16 * kMiB).ok());
  REQUIRE(h.Put("small", 100, 2, true).ok());
  REQUIRE(h.Put("striped", 3 * kMiB + 5, 2).ok());
  REQUIRE(h.Start("inflight", 100).ok());

  Harness fresh(c);
  for (auto& s : h.state->DumpSegments()) REQUIRE(fresh.state->LoadSegment(s, fresh.now_us).ok());
  for (auto& o : h.state->DumpObjects(true)) REQUIRE(fresh.state->LoadObject(o, fresh.now_us).ok());
  CHECK(fresh.listener.committed.empty());
  auto before = h.state->DumpObjects(true);
  auto after = fresh.state->DumpObjects(true);
  REQUIRE(before.size() == after.size());
  for (size_t i = 0; i < before.size(); ++i) {
    CHECK(before[i].key == after[i].key);
    CHECK(before[i].soft_pin == after[i].soft_pin);
    REQUIRE(before[i].replicas.size() == after[i].replicas.size());
    for (size_t r = 0; r < before[i].replicas.size(); ++r)
      for (size_t b = 0; b < before[i].replicas[r].size(); ++b)
        CHECK(before[i].replicas[r][b].offset == after[i].replicas[r][b].offset);
  }
  CHECK(fresh.state->counters().soft_pinned_count == 1);
  CHECK(fresh.state->LoadObject(before[0], fresh.now_us).code() ==
        ErrorCode::OBJECT_ALREADY_EXISTS);
  ObjectDump overlap = before[0];
  overlap.key = "overlap";
  CHECK(fresh.state->LoadObject(overlap, fresh.now_us).code() == ErrorCode::INVALID_PARAMS);
  const uint64_t used = fresh.state->counters().allocated_bytes;
  REQUIRE(fresh.Put("more", 12 * kMiB, 2).ok());
  CHECK(fresh.state->counters().allocated_bytes == used + 24 * kMiB);
}

TEST_CASE("counters track requests, failures, evictions and gauges") {
  Harness h;
  REQUIRE(h.Mount(1, "s", 4 * kMiB).ok());
  REQUIRE(h.Put("a", 2 * kMiB, 1, true).ok());
  REQUIRE(h.Put("b", 2 * kMiB).ok());
  REQUIRE(h.Put("c", 2 * kMiB).ok());
  (void)h.Get("zzz");
  auto c = h.state->counters();
  CHECK(c.capacity_bytes == 4 * kMiB);
  CHECK(c.allocated_bytes == 4 * kMiB);
  CHECK(c.key_count == 2);
  CHECK(c.soft_pinned_count == 1);
  CHECK(c.active_clients == 1);
  CHECK(c.put_start.requests == 3);
  CHECK(c.put_end.requests == 3);
  CHECK(c.get_replica_list.failures == 1);
  CHECK(c.successful_evictions == 1);
  CHECK(c.evicted_keys == 1);
  CHECK(c.evicted_bytes == 2 * kMiB);
}

TEST_CASE("a batch's first key counts as its most recent, so chain heads outlive tails") {
  Options c;
  c.default_kv_lease_ttl_us = 1;  // leases out of the way: only the policy decides
  Harness h(c);
  REQUIRE(h.Mount(1, "s", 3 * kMiB).ok());
  std::vector<msg::KeyRequest> chain = {{Client(1), "head"}, {Client(1), "mid"},
                                          {Client(1), "tail"}};
  std::vector<msg::PutStartRequest> starts;
  for (auto& k : chain) starts.push_back({Client(1), k.key, kMiB, {}});
  REQUIRE(h.state->BatchPutStart(starts, h.now_us).ok());
  REQUIRE(h.state->BatchPutEnd(chain, h.now_us).ok());
  SUBCASE("after the puts") {}
  SUBCASE("after a batch exists") { REQUIRE(h.state->BatchExistKey(chain, h.now_us).ok()); }
  SUBCASE("after a batch get") { REQUIRE(h.state->BatchGetReplicaList(chain, h.now_us).ok()); }
  h.Advance(10);
  REQUIRE(h.Put("next", kMiB).ok());  // the pool is full: one of the three goes
  CHECK_FALSE(h.Exists("tail"));
  CHECK(h.Exists("mid"));
  CHECK(h.Exists("head"));
}

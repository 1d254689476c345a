#include <doctest/doctest.h>

#include "master/master_state.h"
#include "master/master_test_util.h"

using namespace mc;
using namespace mc::master;
using namespace mc::master::testing;

namespace {
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kSecond = 1000000;

Result<msg::PutStartReply> Upsert(Harness& h, const std::string& key, uint64_t size_bytes,
                                    uint64_t client = 1) {
  return h.state->UpsertStart({Client(client), key, size_bytes, {1, false}}, h.now_us);
}
uint64_t OffsetOf(const msg::PutStartReply& r) { return r.replicas.at(0).buffers.at(0).offset; }
uint64_t OffsetOf(const msg::GetReplicaListReply& r) {
  return r.replicas.at(0).buffers.at(0).offset;
}
uint64_t Used(Harness& h) { return h.state->ClusterStatus(h.now_us).used_bytes; }

}  // namespace

TEST_CASE("an upsert of an absent key is a put, and of a present one keeps the old readable") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 64 * kMiB).ok());
  REQUIRE(Upsert(h, "k", 1000).ok());
  CHECK(h.Get("k").code() == ErrorCode::REPLICA_IS_NOT_READY);
  REQUIRE(h.End("k").ok());
  const uint64_t old_offset = OffsetOf(*h.Get("k"));
  auto next = Upsert(h, "k", 3000);
  REQUIRE(next.ok());
  CHECK(next->replicas[0].status == msg::ReplicaStatus::kProcessing);
  CHECK(OffsetOf(*next) != old_offset);  // written beside the old version
  auto during = h.Get("k");              // the old version, whole, until the end
  REQUIRE(during.ok());
  CHECK(during->size_bytes == 1000);
  CHECK(OffsetOf(*during) == old_offset);
  REQUIRE(h.End("k").ok());
  auto after = h.Get("k");
  REQUIRE(after.ok());
  CHECK(after->size_bytes == 3000);
  CHECK(OffsetOf(*after) == OffsetOf(*next));
  CHECK(h.listener.committed == std::vector<std::string>{"k", "k"});
  CHECK(h.state->ClusterStatus(h.now_us).key_count == 1);
}

TEST_CASE("the old version's buffers stay allocated until its readers' lease ends") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 4096).ok());
  REQUIRE(h.Put("k", 1024).ok());
  const uint64_t old_offset = OffsetOf(*h.Get("k"));  // a reader holds a lease
  REQUIRE(Upsert(h, "k", 1024).ok());
  REQUIRE(h.End("k").ok());
  CHECK(h.state->retired_bytes() == 1024);
  CHECK(Used(h) == 2048);
  auto other = h.Start("other", 1024);  // may not land on the old version's bytes
  REQUIRE(other.ok());
  CHECK(OffsetOf(*other) != old_offset);
  REQUIRE(h.End("other").ok());
  h.Advance(h.config.default_kv_lease_ttl_us - 1);
  h.Tick();
  CHECK(h.state->retired_bytes() == 1024);
  h.Advance(1);
  h.Tick();
  CHECK(h.state->retired_bytes() == 0);
  CHECK(Used(h) == 2048);
  auto reuse = h.Start("third", 1024);
  REQUIRE(reuse.ok());
  CHECK(OffsetOf(*reuse) == old_offset);  // free again once the lease ended
}

TEST_CASE("an unleased old version is freed when the upsert ends") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 64 * kMiB).ok());
  REQUIRE(h.Put("k", 1000).ok());
  REQUIRE(Upsert(h, "k", 1000).ok());
  CHECK(Used(h) == 2048);
  REQUIRE(h.End("k").ok());
  CHECK(h.state->retired_bytes() == 0);
  CHECK(Used(h) == 1024);
}

TEST_CASE("releasing a read of the old version does not end the new version's lease") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 64 * kMiB).ok());
  REQUIRE(h.Put("k", 1000).ok());
  REQUIRE(h.state->GetReplicaList({Client(7), "k"}, h.now_us).ok());  // old reader
  REQUIRE(Upsert(h, "k", 1000).ok());
  REQUIRE(h.End("k").ok());
  h.now_us += kSecond;
  // The same client reads the new version, then releases its old read: the
  // release names only the key, and must not end the new read's lease.
  REQUIRE(h.state->GetReplicaList({Client(7), "k"}, h.now_us).ok());
  REQUIRE(h.state->GetReplicaList({Client(8), "k"}, h.now_us).ok());
  h.state->ReleaseLeases({{Client(7), "k"}, {Client(8), "k"}}, h.now_us);
  CHECK(h.state->Remove({"k", false}, h.now_us).code() == ErrorCode::OBJECT_HAS_LEASE);
  h.Advance(h.config.default_kv_lease_ttl_us);  // every read's lease is over
  CHECK(h.state->Remove({"k", false}, h.now_us).ok());
  // Without reads of the old version out, releases end the new lease early.
  REQUIRE(h.Put("j", 1000).ok());
  REQUIRE(Upsert(h, "j", 1000).ok());
  REQUIRE(h.End("j").ok());
  REQUIRE(h.state->GetReplicaList({Client(7), "j"}, h.now_us).ok());
  h.state->ReleaseLeases({{Client(7), "j"}}, h.now_us);
  CHECK(h.state->Remove({"j", false}, h.now_us).ok());
}

TEST_CASE("a revoked or timed-out upsert leaves the old version in place") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 64 * kMiB).ok());
  REQUIRE(h.Put("k", 1000).ok());
  REQUIRE(Upsert(h, "k", 2000).ok());
  REQUIRE(h.state->PutRevoke({Client(1), "k"}, h.now_us).ok());
  CHECK(Used(h) == 1024);
  CHECK(h.Get("k")->size_bytes == 1000);
  REQUIRE(Upsert(h, "k", 2000).ok());
  h.Advance(h.config.put_timeout_us);
  h.Tick();
  CHECK(Used(h) == 1024);
  CHECK(h.End("k").ok());  // too late: nothing to end, the old version stays
  CHECK(h.Get("k")->size_bytes == 1000);
}

TEST_CASE("a later upsert supersedes one not ended yet and the first writer's end fails") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 64 * kMiB).ok());
  REQUIRE(h.Put("k", 1000).ok());
  auto first = Upsert(h, "k", 2000, 2);
  REQUIRE(first.ok());
  auto second = Upsert(h, "k", 3000, 3);
  REQUIRE(second.ok());
  // The first writer may still be writing: its buffers wait for its deadline.
  CHECK(h.state->retired_bytes() == 2048);
  // Before and after the later upsert ended, the first writer learns its
  // version never became the key's (the reference refuses it too).
  CHECK(h.state->PutEnd({Client(2), "k"}, h.now_us).code() == ErrorCode::INVALID_WRITE);
  REQUIRE(h.state->PutEnd({Client(3), "k"}, h.now_us).ok());
  CHECK(h.state->PutEnd({Client(2), "k"}, h.now_us).code() == ErrorCode::INVALID_WRITE);
  CHECK(h.state->PutEnd({Client(3), "k"}, h.now_us).ok());  // a retried end
  auto got = h.Get("k");
  REQUIRE(got.ok());
  CHECK(got->size_bytes == 3000);
  CHECK(OffsetOf(*got) == OffsetOf(*second));
  // The mark lasts until the superseded put's deadline, or until its writer
  // writes the key again.
  REQUIRE(Upsert(h, "k", 1000, 2).ok());
  REQUIRE(h.state->PutEnd({Client(2), "k"}, h.now_us).ok());
  CHECK(h.Get("k")->size_bytes == 1000);
  REQUIRE(Upsert(h, "k", 2000, 4).ok());
  REQUIRE(Upsert(h, "k", 3000, 5).ok());
  REQUIRE(h.state->PutEnd({Client(5), "k"}, h.now_us).ok());
  h.Advance(h.config.put_timeout_us);
  h.Tick();
  CHECK(h.state->PutEnd({Client(4), "k"}, h.now_us).ok());  // forgotten: a no-op
  CHECK(h.Get("k")->size_bytes == 3000);
}

TEST_CASE("two upserts of one key by one client: the later one is ended by either end") {
  // A PutEnd names the client and the key, so it cannot tell them apart.
  Harness h;
  REQUIRE(h.Mount(1, "s1", 64 * kMiB).ok());
  REQUIRE(h.Put("k", 1000).ok());
  REQUIRE(Upsert(h, "k", 2000, 2).ok());
  REQUIRE(Upsert(h, "k", 3000, 2).ok());
  REQUIRE(h.state->PutEnd({Client(2), "k"}, h.now_us).ok());
  CHECK(h.Get("k")->size_bytes == 3000);
  CHECK(h.state->PutEnd({Client(2), "k"}, h.now_us).ok());
}

TEST_CASE("an upsert takes a key still being put from its writer") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 64 * kMiB).ok());
  auto first = h.state->PutStart({Client(2), "k", 1000, {1, false}}, h.now_us);
  REQUIRE(first.ok());
  auto second = Upsert(h, "k", 1000, 3);
  REQUIRE(second.ok());
  CHECK(OffsetOf(*second) != OffsetOf(*first));  // the first writer's bytes are kept
  CHECK(h.state->retired_bytes() == 1024);
  CHECK(h.state->PutEnd({Client(2), "k"}, h.now_us).code() == ErrorCode::INVALID_WRITE);
  REQUIRE(h.state->PutEnd({Client(3), "k"}, h.now_us).ok());
  // Still refused once the upsert ended: its version never became the key's.
  CHECK(h.state->PutEnd({Client(2), "k"}, h.now_us).code() == ErrorCode::INVALID_WRITE);
  h.Advance(h.config.put_timeout_us);
  h.Tick();
  CHECK(h.state->retired_bytes() == 0);
}

TEST_CASE("unmounting a segment forgets the upserts and retired buffers on it") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 64 * kMiB).ok());
  REQUIRE(h.Put("k", 1000).ok());
  REQUIRE(h.Get("k").ok());
  REQUIRE(Upsert(h, "k", 1000).ok());
  REQUIRE(h.End("k").ok());
  REQUIRE(Upsert(h, "k", 1000).ok());
  CHECK(h.state->retired_bytes() == 1024);
  REQUIRE(h.state->UnmountSegment({Client(1), "s1"}, h.now_us).ok());
  CHECK(h.state->retired_bytes() == 0);
  CHECK(Used(h) == 0);
  CHECK(h.End("k").code() == ErrorCode::OBJECT_NOT_FOUND);
  h.Advance(h.config.put_timeout_us);
  h.Tick();  // nothing left to free on a segment that is gone
}

TEST_CASE("a copy task places a replica on each target and reports its progress") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 64 * kMiB).ok());
  REQUIRE(h.Mount(1, "s2", 64 * kMiB).ok());
  REQUIRE(h.Mount(1, "s3", 64 * kMiB).ok());
  REQUIRE(h.state->PutStart({Client(1), "k", 1000, {1, false, {{"s1"}}}}, h.now_us).ok());
  REQUIRE(h.End("k").ok());
  auto id = h.state->CreateCopyTask({Client(5), "k", {"s2", "s3"}}, h.now_us, 1000);
  REQUIRE(id.ok());
  auto info = h.state->QueryTask({Client(9), *id}, h.now_us);
  REQUIRE(info.ok());
  CHECK(info->task_status() == msg::TaskStatus::kPending);
  CHECK(info->type == static_cast<uint8_t>(msg::TaskType::kReplicaCopy));
  CHECK(info->assigned_client == Client(5));
  CHECK(h.state->TaskStart({Client(6), *id}, h.now_us).code() == ErrorCode::INVALID_PARAMS);
  h.Advance(2000);
  auto start = h.state->TaskStart({Client(5), *id}, h.now_us);
  REQUIRE(start.ok());
  CHECK(SegmentsOf(start->source) == std::set<std::string>{"s1"});
  REQUIRE(start->targets.size() == 2);
  CHECK(SegmentsOf(start->targets[0]) == std::set<std::string>{"s2"});
  CHECK(SegmentsOf(start->targets[1]) == std::set<std::string>{"s3"});
  CHECK(h.state->QueryTask({Client(9), *id}, h.now_us)->task_status() == msg::TaskStatus::kProcessing);
  CHECK(h.state->QueryTask({Client(9), *id}, h.now_us)->updated_unix_ms == 1002);
  CHECK(h.Get("k")->replicas.size() == 1);  // not readable before the end
  REQUIRE(h.state->TaskEnd({Client(5), *id, true, ""}, h.now_us).ok());
  CHECK(h.state->QueryTask({Client(9), *id}, h.now_us)->task_status() == msg::TaskStatus::kSuccess);
  auto got = h.Get("k");
  REQUIRE(got->replicas.size() == 3);
  CHECK(SegmentsOf(got->replicas[2]) == std::set<std::string>{"s3"});
  CHECK(Used(h) == 3 * 1024);
}

TEST_CASE("a move task moves the replica and keeps the source until its lease ends") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 64 * kMiB).ok());
  REQUIRE(h.Mount(1, "s2", 64 * kMiB).ok());
  REQUIRE(h.state->PutStart({Client(1), "k", 1000, {1, false, {{"s1"}}}}, h.now_us).ok());
  REQUIRE(h.End("k").ok());
  CHECK(h.state->CreateMoveTask({Client(5), "k", "s1", "s1"}, h.now_us, 0).code() ==
        ErrorCode::INVALID_PARAMS);
  CHECK(h.state->CreateMoveTask({Client(5), "k", "s2", "s1"}, h.now_us, 0).code() ==
        ErrorCode::INVALID_PARAMS);  // no replica on s2
  auto id = h.state->CreateMoveTask({Client(5), "k", "s1", "s2"}, h.now_us, 0);
  REQUIRE(id.ok());
  REQUIRE(h.state->TaskStart({Client(5), *id}, h.now_us).ok());
  REQUIRE(h.state->TaskEnd({Client(5), *id, true, ""}, h.now_us).ok());
  auto got = h.Get("k");
  REQUIRE(got->replicas.size() == 1);
  CHECK(SegmentsOf(got->replicas[0]) == std::set<std::string>{"s2"});
  CHECK(h.state->retired_bytes() == 1024);  // the task's own read is leased
  h.Advance(h.config.default_kv_lease_ttl_us);
  h.Tick();
  CHECK(h.state->retired_bytes() == 0);
  CHECK(Used(h) == 1024);
  CHECK(h.state->QueryTask({Client(5), *id}, h.now_us)->type == static_cast<uint8_t>(msg::TaskType::kReplicaMove));
}

TEST_CASE("a copy fails when its object changes, its client fails it or it runs out of time") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 64 * kMiB).ok());
  REQUIRE(h.Mount(1, "s2", 64 * kMiB).ok());
  REQUIRE(h.state->PutStart({Client(1), "k", 1000, {1, false, {{"s1"}}}}, h.now_us).ok());
  REQUIRE(h.End("k").ok());
  auto id = h.state->CreateCopyTask({Client(5), "k", {"s2"}}, h.now_us, 0);
  REQUIRE(h.state->TaskStart({Client(5), *id}, h.now_us).ok());
  REQUIRE(Upsert(h, "k", 1000).ok());
  REQUIRE(h.End("k").ok());  // a copy of the old bytes would mix versions
  CHECK(h.state->TaskEnd({Client(5), *id, true, ""}, h.now_us).code() ==
        ErrorCode::OBJECT_NOT_FOUND);
  auto failed = h.state->QueryTask({Client(5), *id}, h.now_us);
  CHECK(failed->task_status() == msg::TaskStatus::kFailed);
  CHECK(failed->message.find("replaced") != std::string::npos);
  CHECK(h.Get("k")->replicas.size() == 1);

  auto id2 = h.state->CreateCopyTask({Client(5), "k", {"s2"}}, h.now_us, 0);
  REQUIRE(h.state->TaskStart({Client(5), *id2}, h.now_us).ok());
  REQUIRE(h.state->TaskEnd({Client(5), *id2, false, "read failed"}, h.now_us).ok());
  CHECK(h.state->QueryTask({Client(5), *id2}, h.now_us)->message == "read failed");

  auto id3 = h.state->CreateCopyTask({Client(5), "k", {"s2"}}, h.now_us, 0);
  h.Advance(h.config.put_timeout_us);
  h.Tick();
  CHECK(h.state->QueryTask({Client(5), *id3}, h.now_us)->task_status() == msg::TaskStatus::kFailed);
  CHECK(h.state->TaskStart({Client(5), *id3}, h.now_us).code() == ErrorCode::INVALID_PARAMS);
  CHECK(h.state->QueryTask({Client(5), msg::TaskId{7, 7}}, h.now_us).code() ==
        ErrorCode::TASK_NOT_FOUND);
  h.Advance(h.config.default_kv_lease_ttl_us);
  h.Tick();
  CHECK(Used(h) == 1024);  // every target buffer of the failed copies was freed
}

TEST_CASE("copy and move tasks refuse unknown keys and segments") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 64 * kMiB).ok());
  REQUIRE(h.Put("k", 1000).ok());
  CHECK(h.state->CreateCopyTask({Client(5), "nope", {"s1"}}, h.now_us, 0).code() ==
        ErrorCode::OBJECT_NOT_FOUND);
  CHECK(h.state->CreateCopyTask({Client(5), "k", {"zz"}}, h.now_us, 0).code() ==
        ErrorCode::INVALID_PARAMS);
  CHECK(h.state->CreateCopyTask({Client(5), "k", {}}, h.now_us, 0).code() ==
        ErrorCode::INVALID_PARAMS);
  CHECK(h.state->CreateMoveTask({Client(5), "k", "s1", "zz"}, h.now_us, 0).code() ==
        ErrorCode::INVALID_PARAMS);
  // A copy to a segment that already holds the object has nothing to write.
  auto id = h.state->CreateCopyTask({Client(5), "k", {"s1"}}, h.now_us, 0);
  auto start = h.state->TaskStart({Client(5), *id}, h.now_us);
  REQUIRE(start.ok());
  CHECK(start->targets.empty());
  REQUIRE(h.state->TaskEnd({Client(5), *id, true, ""}, h.now_us).ok());
  CHECK(h.Get("k")->replicas.size() == 1);
}

TEST_CASE("clearing replicas skips leased keys and keeps the other segments' replicas") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 64 * kMiB).ok());
  REQUIRE(h.Mount(1, "s2", 64 * kMiB).ok());
  REQUIRE(h.Put("a", 1000, 2).ok());
  REQUIRE(h.Put("b", 1000, 2).ok());
  REQUIRE(h.Put("c", 1000, 2).ok());
  REQUIRE(h.Get("c").ok());
  auto r = h.state->BatchReplicaClear({Client(1), {"a", "c", "nope"}, "s1"}, h.now_us);
  CHECK(r.cleared == std::vector<std::string>{"a"});
  h.now_us += 1;  // peek without a new lease: the listing shows replica counts
  auto keys = h.state->ListKeys({"", 10, ""}, h.now_us);
  REQUIRE(keys.ok());
  CHECK(keys->keys[0].replicas == 1);
  CHECK(h.state->BatchReplicaClear({Client(1), {"a"}, "s1"}, h.now_us).cleared.empty());
  CHECK(h.state->BatchReplicaClear({Client(1), {"a", "b"}, ""}, h.now_us).cleared ==
        std::vector<std::string>{"a", "b"});
  CHECK(h.state->ClusterStatus(h.now_us).key_count == 1);
  CHECK(Used(h) == 2048);
  CHECK(h.state->BatchReplicaClear({Client(1), {"c"}, "zz"}, h.now_us).cleared.empty());
}

TEST_CASE("removal by regex refuses a bad pattern and skips leased keys unless forced") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 64 * kMiB).ok());
  for (const char* k : {"user/1", "user/2", "user/3", "sys/1"}) REQUIRE(h.Put(k, 1000).ok());
  REQUIRE(h.Get("user/3").ok());
  auto bad = h.state->RemoveByRegex({"user/(", false}, h.now_us);
  CHECK(bad.code() == ErrorCode::INVALID_PARAMS);
  CHECK(bad.status().message().find("user/(") != std::string::npos);
  auto r = h.state->RemoveByRegex({"^user/", false}, h.now_us);
  REQUIRE(r.ok());
  CHECK(r->removed == 2);
  CHECK(h.state->ClusterStatus(h.now_us).key_count == 2);
  auto forced = h.state->RemoveByRegex({"[0-9]$", true}, h.now_us);
  REQUIRE(forced.ok());
  CHECK(forced->removed == 2);
  CHECK(h.state->retired_bytes() == 1024);  // user/3's reader keeps its bytes
  h.Advance(h.config.default_kv_lease_ttl_us);
  h.Tick();
  CHECK(Used(h) == 0);
  CHECK(h.listener.removed.size() == 4);
}

TEST_CASE("an object being upserted is not evicted to make room") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 3072).ok());
  REQUIRE(h.Put("k", 1024).ok());
  REQUIRE(Upsert(h, "k", 1024).ok());
  REQUIRE(h.Put("a", 1024).ok());
  // Full: the next put evicts "a", never the old version of "k".
  REQUIRE(h.Put("b", 1024).ok());
  CHECK(h.state->ClusterStatus(h.now_us).key_count == 2);
  REQUIRE(h.End("k").ok());
  CHECK(h.Get("k").ok());
  CHECK(h.Get("a").code() == ErrorCode::OBJECT_NOT_FOUND);
}

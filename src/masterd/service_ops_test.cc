#include <doctest/doctest.h>

#include "common/capability.h"
#include "masterd/service.h"
#include "masterd/service_test_util.h"

using namespace mc;

using masterd::testing::Mount;

namespace {

Status Check(const char* key, const msg::BufferDesc& b, CapabilityOp op, uint64_t now_ms) {
  CapabilityGrant g{op, 9, b.offset, b.size_bytes, b.capability_expiry_unix_ms};
  return CheckCapability(key, g, b.capability, op, b.offset, b.size_bytes, now_ms);
}

}  // namespace

TEST_CASE("an upsert's new buffers carry write grants and the old ones stay readable") {
  ManualClock clock;
  MasterConfig config;
  masterd::MasterService svc(config, clock);
  REQUIRE(svc.MountSegment(Mount("s1", "secret-1")).ok());
  REQUIRE(svc.PutStart({{1, 2}, "k", 1000, {}}).ok());
  REQUIRE(svc.PutEnd({{1, 2}, "k"}).ok());
  auto old = svc.GetReplicaList({{1, 2}, "k"});
  REQUIRE(old.ok());
  const msg::BufferDesc before = old->replicas.at(0).buffers.at(0);

  auto up = svc.BatchUpsertStart({{{{1, 2}, "k", 2000, {}}}});
  REQUIRE(up.ok());
  REQUIRE(up->at(0).status.ok());
  const msg::BufferDesc fresh = up->at(0).value.replicas.at(0).buffers.at(0);
  CHECK(Check("secret-1", fresh, CapabilityOp::kWrite, clock.UnixMs()).ok());
  CHECK(fresh.offset != before.offset);
  REQUIRE(svc.PutEnd({{1, 2}, "k"}).ok());
  // The old reader's grant still covers bytes nobody else may take.
  CHECK(Check("secret-1", before, CapabilityOp::kRead, clock.UnixMs()).ok());
  auto other = svc.PutStart({{1, 2}, "other", 1000, {}});
  REQUIRE(other.ok());
  CHECK(other->replicas.at(0).buffers.at(0).offset != before.offset);
  CHECK(svc.GetReplicaList({{1, 2}, "k"})->size_bytes == 2000);
}

TEST_CASE("a task's start grants a read of the source and writes of the targets") {
  ManualClock clock;
  MasterConfig config;
  masterd::MasterService svc(config, clock);
  REQUIRE(svc.MountSegment(Mount("s1", "secret-1")).ok());
  msg::MountSegmentRequest second = Mount("s2", "secret-2");
  second.client = {3, 4};
  REQUIRE(svc.MountSegment(second).ok());
  msg::PutOptions on_s1;
  on_s1.placement.preferred_segments = {"s1"};
  REQUIRE(svc.BatchPutStartEx({{{{1, 2}, "k", 1000, on_s1}}}).ok());
  REQUIRE(svc.PutEnd({{1, 2}, "k"}).ok());

  auto id = svc.CreateMoveTask({{5, 6}, "k", "s1", "s2"});
  REQUIRE(id.ok());
  auto start = svc.TaskStart({{5, 6}, *id});
  REQUIRE(start.ok());
  const uint64_t now = clock.UnixMs();
  CHECK(Check("secret-1", start->source.buffers.at(0), CapabilityOp::kRead, now).ok());
  CHECK_FALSE(Check("secret-1", start->source.buffers.at(0), CapabilityOp::kWrite, now).ok());
  REQUIRE(start->targets.size() == 1);
  CHECK(Check("secret-2", start->targets[0].buffers.at(0), CapabilityOp::kWrite, now).ok());
  REQUIRE(svc.TaskEnd({{5, 6}, *id, true, ""}).ok());
  auto info = svc.QueryTask({{7, 7}, *id});
  REQUIRE(info.ok());
  CHECK(info->task_status() == msg::TaskStatus::kSuccess);
  CHECK(info->created_unix_ms == now);
  auto got = svc.GetReplicaList({{1, 2}, "k"});
  REQUIRE(got.ok());
  CHECK(got->replicas.at(0).buffers.at(0).segment_name == "s2");
}

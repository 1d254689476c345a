#include "masterd/tier_service.h"

#include <doctest/doctest.h>

#include "common/clock.h"
#include "masterd/service.h"
#include "masterd/service_test_util.h"

using namespace mc;

namespace {

constexpr uint64_t kMiB = 1ull << 20;

// A master with the disk tier, one 64 MiB segment "s1" with a disk "d1".
struct TierFixture {
  ManualClock clock;
  MasterConfig config = [] {
    MasterConfig c;
    c.enable_offload = true;
    c.promotion_on_hit = true;
    c.eviction_high_watermark_ratio = 0.5;
    return c;
  }();
  masterd::MasterService svc{config, clock};
  TierFixture() {
    REQUIRE(svc.MountSegment(masterd::testing::Mount("s1", "key")).ok());
    REQUIRE(svc.TierAnnounce({{1, 2}, "s1", "d1", 64 * kMiB, true, true, {}}).ok());
  }
  void Put(const std::string& key) {
    REQUIRE(svc.PutStart({{1, 2}, key, kMiB, {}}).ok());
    REQUIRE(svc.PutEnd({{1, 2}, key}).ok());
  }
  // One pull by the store, answering every item as `status` says.
  std::vector<msg::TierWork> Pull(const std::vector<msg::TierResult>& results = {}) {
    auto r = svc.TierFetch({{1, 2}, "s1", 0, 64 * kMiB, results});
    REQUIRE(r.ok());
    return r->work;
  }
  static std::vector<msg::TierResult> AllOk(const std::vector<msg::TierWork>& work) {
    std::vector<msg::TierResult> out;
    for (const auto& w : work) out.push_back({w.ticket, Status::Ok()});
    return out;
  }
};

}  // namespace

TEST_CASE("past the watermark objects are offloaded, not dropped, and read back through staging") {
  TierFixture f;
  for (int i = 0; i < 40; ++i) f.Put("k" + std::to_string(i));
  f.svc.Tick();
  auto work = f.Pull();
  REQUIRE(!work.empty());
  for (const auto& w : work) CHECK(w.kind == static_cast<uint8_t>(msg::TierWorkKind::kOffload));
  const std::string victim = work[0].key;
  CHECK(f.svc.GetReplicaList({{1, 2}, victim}).ok());  // still in memory while written
  f.Pull(TierFixture::AllOk(work));
  CHECK(f.svc.Counters().allocated_bytes < 40 * kMiB);
  CHECK(f.svc.ExistKey({{1, 2}, victim}).value());

  // A get of the disk-only object stages it and asks the reader to wait.
  auto miss = f.svc.GetReplicaList({{1, 2}, victim});
  REQUIRE(miss.code() == ErrorCode::REPLICA_IS_NOT_READY);
  CHECK(miss.status().message().starts_with(msg::kStagingFromDisk));
  auto stage = f.Pull();
  REQUIRE(stage.size() == 1);
  CHECK(stage[0].kind == static_cast<uint8_t>(msg::TierWorkKind::kStage));
  CHECK(stage[0].key == victim);
  f.Pull(TierFixture::AllOk(stage));
  CHECK(f.svc.GetReplicaList({{1, 2}, victim}).ok());
}

TEST_CASE("a failed offload evicts as before and a checksum failure drops the disk replica") {
  TierFixture f;
  for (int i = 0; i < 40; ++i) f.Put("k" + std::to_string(i));
  f.svc.Tick();
  auto work = f.Pull();
  REQUIRE(work.size() >= 2);
  std::vector<msg::TierResult> results = TierFixture::AllOk(work);
  results[0].status = Error(ErrorCode::FILE_WRITE_FAIL, "ENOSPC");
  f.Pull(results);
  CHECK(f.svc.GetReplicaList({{1, 2}, work[0].key}).code() == ErrorCode::OBJECT_NOT_FOUND);
  CHECK(f.svc.WithTier([](const masterd::TierService* t) { return t->counters().offload_failures; }) == 1);

  const std::string bad = work[1].key;
  REQUIRE(f.svc.GetReplicaList({{1, 2}, bad}).code() == ErrorCode::REPLICA_IS_NOT_READY);
  auto stage = f.Pull();
  REQUIRE(stage.size() == 1);
  f.Pull({{stage[0].ticket, Error(ErrorCode::CHECKSUM_MISMATCH, "crc")}});
  CHECK(f.svc.GetReplicaList({{1, 2}, bad}).code() == ErrorCode::OBJECT_NOT_FOUND);
  CHECK(f.svc.WithTier([](const masterd::TierService* t) { return t->counters().checksum_failures; }) == 1);
}

TEST_CASE("a restarted store's objects are re-adopted only when still recorded") {
  TierFixture f;
  for (int i = 0; i < 40; ++i) f.Put("k" + std::to_string(i));
  f.svc.Tick();
  auto work = f.Pull();
  REQUIRE(work.size() >= 2);
  f.Pull(TierFixture::AllOk(work));
  REQUIRE(f.svc.Remove({work[0].key, false}).ok());
  auto again = f.svc.TierAnnounce({{1, 2}, "s1", "d1", 64 * kMiB, true, true,
                                   {{work[0].key, kMiB, 1}, {work[1].key, kMiB, 2},
                                    {"never-seen", 5, 3}}});
  REQUIRE(again.ok());
  CHECK(again->drop_keys == std::vector<std::string>{work[0].key, "never-seen"});
  CHECK(f.svc.ExistKey({{1, 2}, work[1].key}).value());
  CHECK_FALSE(f.svc.ExistKey({{1, 2}, work[0].key}).value());
}

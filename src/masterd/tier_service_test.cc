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

std::vector<msg::TierWork> Stages(const std::vector<msg::TierWork>& work) {
  std::vector<msg::TierWork> out;
  for (const auto& w : work)
    if (w.kind == static_cast<uint8_t>(msg::TierWorkKind::kStage)) out.push_back(w);
  return out;
}

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
  auto stage = Stages(f.Pull());  // beside offloads making room ahead
  REQUIRE(stage.size() == 1);
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
  auto stage = Stages(f.Pull());
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

TEST_CASE("offload starts at the put that crosses the watermark, and ls lists the disk keys") {
  TierFixture f;
  for (int i = 0; i < 40; ++i) f.Put("k" + std::to_string(i));  // no tick
  auto work = f.Pull();
  CHECK(work.size() == 8);  // 40 MiB in 64 MiB at watermark 0.5: 8 MiB over
  f.Pull(TierFixture::AllOk(work));
  CHECK(f.svc.Counters().allocated_bytes == 32 * kMiB);
  auto listed = f.svc.ListKeysTiered({"k", 1000, ""});
  REQUIRE(listed.ok());
  REQUIRE(listed->list.keys.size() == 40);
  size_t on_disk = 0;
  for (size_t i = 0; i < 40; ++i) {
    const bool disk = listed->tiers[i] == static_cast<uint8_t>(msg::KeyTier::kDisk);
    on_disk += disk;
    CHECK(listed->list.keys[i].replicas == (disk ? 0u : 1u));
  }
  CHECK(on_disk == 8);
  CHECK(f.svc.ListKeys({"k", 1000, ""})->keys.size() == 40);
  CHECK(f.svc.WithTier([](const masterd::TierService* t) { return t->counters().dropped; }) == 0);
}

TEST_CASE("a put that finds no free memory waits for the offloads in flight instead of evicting") {
  TierFixture f;
  for (int i = 0; i < 64; ++i) f.Put("k" + std::to_string(i));  // full; 32 MiB being offloaded
  const msg::PutStartRequest late{{1, 2}, "late", kMiB, {}};
  const uint64_t woken = f.svc.parking().generation();
  {
    rpc::ParkScope scope(/*allowed=*/true, /*due=*/false);
    (void)f.svc.PutStart(late);
    CHECK(scope.parked);
  }
  CHECK(f.svc.Counters().evicted_keys == 0);
  f.Pull(TierFixture::AllOk(f.Pull()));
  CHECK(f.svc.parking().generation() > woken);  // the held put is called again
  {
    rpc::ParkScope scope(true, false);
    CHECK(f.svc.PutStart(late).ok());
    CHECK_FALSE(scope.parked);
  }
  auto dropped = [&] {
    return f.svc.WithTier([](const masterd::TierService* t) { return t->counters().dropped; });
  };
  CHECK(dropped() == 0);
  // Full again with writes in flight: a put whose wait is over evicts, and
  // what it evicts without a disk copy is counted.
  for (int i = 0; i < 32; ++i) f.Put("m" + std::to_string(i));
  const uint64_t evicted = f.svc.Counters().evicted_keys;
  rpc::ParkScope due(false, /*due=*/true);
  CHECK(f.svc.PutStart({{1, 2}, "later", kMiB, {}}).ok());
  CHECK(f.svc.Counters().evicted_keys == evicted + 1);
  CHECK(f.svc.Counters().allocated_bytes == 64 * kMiB);
  CHECK(dropped() == 1);
}

TEST_CASE("an idle store's poll is held until work is queued for it") {
  TierFixture f;
  const msg::TierPollRequest poll{{{1, 2}, "s1", 0, 64 * kMiB, {}}, 2500};
  const uint64_t woken = f.svc.parking().generation();
  {
    rpc::ParkScope scope(true, false);
    REQUIRE(f.svc.TierPoll(poll).ok());
    CHECK(scope.parked);
  }
  CHECK(f.svc.parking().generation() == woken);
  for (int i = 0; i < 40; ++i) f.Put("k" + std::to_string(i));
  CHECK(f.svc.parking().generation() > woken);
  {
    rpc::ParkScope scope(true, false);
    auto r = f.svc.TierPoll(poll);
    REQUIRE(r.ok());
    CHECK_FALSE(scope.parked);
    CHECK(r->work.size() == 8);
  }
  {
    rpc::ParkScope due(false, true);  // its wait is over: no work, ask again at once
    auto r = f.svc.TierPoll(poll);
    REQUIRE(r.ok());
    CHECK(r->work.empty());
    CHECK(r->wait_ms == 0);
  }
  auto r = f.svc.TierPoll(poll);  // outside a server: answered at once, with a wait
  REQUIRE(r.ok());
  CHECK(r->wait_ms == masterd::TierService::kIdleWaitMs);
  CHECK(f.svc.WithTier([](const masterd::TierService* t) { return t->counters().polls; }) == 3);
}

TEST_CASE("an upsert batch that finds no free memory waits for the offloads in flight too") {
  TierFixture f;
  for (int i = 0; i < 64; ++i) f.Put("k" + std::to_string(i));  // full; 32 MiB being offloaded
  const msg::Batch<msg::PutStartExRequest> upsert{{{{1, 2}, "k1", kMiB, {}}},
                                                 {{{1, 2}, "new", kMiB, {}}}};
  const uint64_t woken = f.svc.parking().generation();
  {
    rpc::ParkScope scope(/*allowed=*/true, /*due=*/false);
    (void)f.svc.BatchUpsertStart(upsert);
    CHECK(scope.parked);
  }
  CHECK(f.svc.Counters().evicted_keys == 0);
  f.Pull(TierFixture::AllOk(f.Pull()));
  CHECK(f.svc.parking().generation() > woken);  // the held batch is called again
  {
    rpc::ParkScope scope(true, false);
    auto r = f.svc.BatchUpsertStart(upsert);
    REQUIRE(r.ok());
    CHECK_FALSE(scope.parked);
    for (const auto& item : *r) CHECK(item.status.ok());
  }
  CHECK(f.svc.WithTier([](const masterd::TierService* t) { return t->counters().dropped; }) == 0);
}

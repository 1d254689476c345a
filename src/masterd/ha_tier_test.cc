// The disk tier under HA (issue 31): disk replicas ride in the HA log and
// its snapshots, so a standby that takes over knows which objects live on
// which store's disk.
#include "masterd/ha_image.h"

#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <map>
#include <thread>

#include "common/clock.h"
#include "ha/election.h"
#include "ha/fake_etcd.h"
#include "masterd/ha_log.h"
#include "masterd/ha_test_util.h"
#include "masterd/journal_test_util.h"
#include "masterd/service.h"
#include "masterd/service_test_util.h"
#include "masterd/tier_service.h"

using namespace mc;

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kWaitUs = 10000000;  // a bound on a wait that should take milliseconds
const msg::ClientId kClient{1, 2};

ha::HaKeys Keys() { return *ha::HaKeys::For("tier"); }

using DiskMap = std::map<std::string, std::pair<std::string, uint64_t>>;

MasterConfig TierConfig() {
  MasterConfig c;
  c.enable_offload = true;
  c.promotion_on_hit = true;
  c.eviction_high_watermark_ratio = 0.5;
  return c;
}

DiskMap DisksOf(const masterd::MasterService& svc) {
  return svc.WithTier([](const masterd::TierService* t) {
    DiskMap out;
    for (const auto& [k, e] : t->disks().entries()) out[k] = {e.disk_id, e.size_bytes};
    return out;
  });
}

DiskMap DisksOf(const masterd::HaImage& image) {
  DiskMap out;
  for (const auto& [k, d] : image.disk_replicas()) out[k] = {d.disk_id, d.size_bytes};
  return out;
}

// An HA leader with the disk tier: a MasterService whose listener and disk
// records are its HaLog, on a fake etcd; one 64 MiB segment "s1" whose
// store announced the disk "d1", room for five 1 MiB objects.
struct TierLeader {
  ManualClock clock;
  ha::FakeEtcd etcd{clock};
  ha::Election election{etcd, Keys(), "leader:1", 5};
  ha::Term term = **election.TryAcquire();
  masterd::HaLog log;
  masterd::MasterService svc{TierConfig(), clock, &log};
  static constexpr uint64_t kDiskBytes = 5 * (kMiB + 4096);

  explicit TierLeader(uint64_t snapshot_every)
      : log(etcd, Keys(), clock, {.snapshot_every_entries = snapshot_every}) {
    log.Begin(term, masterd::HaImage());
    REQUIRE(svc.LoadTier(&log, [](const masterd::DiskReplicaVisitor&) { return Status::Ok(); },
                         "nothing").ok());
    REQUIRE(svc.MountSegment(masterd::testing::Mount("s1", "key")).ok());
    Announce({});
  }
  msg::TierAnnounceReply Announce(const std::vector<msg::DiskObject>& objects) {
    auto r = svc.TierAnnounce({kClient, "s1", "d1", kDiskBytes, true, true, objects});
    REQUIRE(r.ok());
    return *r;
  }
  void Put(const std::string& key) {
    REQUIRE(svc.PutStart({kClient, key, kMiB, {}}).ok());
    REQUIRE(svc.PutEnd({kClient, key}).ok());
  }
  // The store's worker: takes its work and reports each item done (`fail`:
  // the status of the items of that key instead), until none is left.
  void Drain(const std::map<std::string, Status>& fail = {}) {
    std::vector<msg::TierResult> results;
    for (int round = 0; round < 100; ++round) {
      auto r = svc.TierFetch({kClient, "s1", 0, kDiskBytes, results});
      REQUIRE(r.ok());
      if (r->work.empty() && results.empty()) return;
      results.clear();
      for (const auto& w : r->work) {
        auto f = fail.find(w.key);
        results.push_back({w.ticket, f == fail.end() ? Status::Ok() : f->second});
      }
    }
    FAIL("the store's work did not drain");
  }
  // Keys on disk with no copy in memory, the most recently used first (a
  // read makes room in memory by an offload, which may evict the disk's
  // least recently used object).
  std::vector<std::string> DiskOnly() {
    std::map<uint64_t, std::string, std::greater<>> by_use;
    svc.WithTier([&](const masterd::TierService* t) {
      for (const auto& [k, e] : t->disks().entries()) by_use[e.lru_seq] = k;
      return 0;
    });
    std::vector<std::string> out;
    for (const auto& [seq, k] : by_use) {
      if (!svc.WithState([&](master::MasterState& s) { return s.CompleteId(k).has_value(); }))
        out.push_back(k);
    }
    return out;
  }
  // Starts reading `key` from disk (staging) and lets the store do the work.
  void ReadFromDisk(const std::string& key, const std::map<std::string, Status>& fail = {}) {
    CAPTURE(key);
    REQUIRE(svc.GetReplicaList({kClient, key}).code() == ErrorCode::REPLICA_IS_NOT_READY);
    Drain(fail);
  }
};

// A standby that took over `image`: its service, loaded as ha_master.cc does.
struct TakenOver {
  ManualClock clock;
  masterd::MasterService svc{TierConfig(), clock};
  explicit TakenOver(const masterd::HaImage& image, masterd::DiskReplicaListener* records) {
    auto loaded = svc.WithState([&](master::MasterState& s) { return image.LoadInto(s, 0); });
    REQUIRE(loaded.ok());
    CHECK(*loaded == 0);
    svc.AdoptLoadedSegments();
    REQUIRE(svc.LoadTier(records, [&](const masterd::DiskReplicaVisitor& v) {
      return image.ForEachDiskReplica(v);
    }, "the image").ok());
  }
};

// Records nowhere: the taken-over service's own log is not under test.
struct NoRecords final : masterd::DiskReplicaListener {
  void OnDiskReplica(const std::string&, const std::string&, uint64_t) override {}
  void OnDiskReplicaRemoved(const std::string&) override {}
};

}  // namespace

TEST_CASE("disk replica records round-trip and a cut one is refused") {
  masterd::HaRecord add{.kind = masterd::HaRecord::Kind::kDiskReplica, .name = "k",
                        .disk_id = "host:/ssd", .size_bytes = 12345};
  masterd::HaRecord gone{.kind = masterd::HaRecord::Kind::kDiskRemove, .name = "j"};
  const std::string entry = masterd::EncodeHaEntry({add, gone});
  auto back = masterd::DecodeHaEntry(entry);
  REQUIRE(back.ok());
  REQUIRE(back->size() == 2);
  CHECK((*back)[0].kind == masterd::HaRecord::Kind::kDiskReplica);
  CHECK((*back)[0].name == "k");
  CHECK((*back)[0].disk_id == "host:/ssd");
  CHECK((*back)[0].size_bytes == 12345);
  CHECK((*back)[1].kind == masterd::HaRecord::Kind::kDiskRemove);
  CHECK((*back)[1].name == "j");
  for (size_t cut = 0; cut < entry.size(); ++cut)
    CHECK_FALSE(masterd::DecodeHaEntry(entry.substr(0, cut)).ok());

  masterd::HaImage image;
  REQUIRE(image.ApplyEntry(entry).ok());
  masterd::HaImage restored;
  REQUIRE(restored.Restore(image.Snapshot()).ok());
  CHECK(DisksOf(restored) == DiskMap{{"k", {"host:/ssd", 12345}}});
}

TEST_CASE("a standby applying the HA log ends with the leader's disk replicas") {
  // Once following the log alone, once from a snapshot of every entry.
  for (const uint64_t snapshot_every : {uint64_t{1000000}, uint64_t{1}}) {
    CAPTURE(snapshot_every);
    TierLeader g(snapshot_every);
    // Offload: 40 MiB in 64 MiB at watermark 0.5 moves 8 objects to a disk
    // that holds 5, which drops its 3 oldest (disk eviction).
    for (int i = 0; i < 40; ++i) g.Put("k" + std::to_string(i));
    g.Drain();
    const auto counters = [&] {
      return g.svc.WithTier([](const masterd::TierService* t) { return t->counters(); });
    };
    CHECK(counters().offloads == 8);
    CHECK(counters().disk_evictions == 3);
    REQUIRE(g.DiskOnly().size() == 5);

    // Promotion: a second read from disk within the window keeps the copy.
    // (Each read makes room in memory: one more offload, one more disk
    // eviction; so the keys below are picked as they are at each step.)
    const std::string hot = g.DiskOnly()[0];
    g.ReadFromDisk(hot);
    g.clock.AdvanceUs(masterd::TierService::kStagedKeepUs + 1);
    REQUIRE(g.svc.Ping({kClient}).ok());  // the store is alive
    g.svc.Tick();  // the staged copy goes: on disk only again
    g.Drain();
    REQUIRE(g.DiskOnly().size() >= 2);
    REQUIRE(g.DiskOnly()[1] == hot);  // behind the object offloaded to read it
    g.ReadFromDisk(hot);
    CHECK(counters().promotions == 1);
    CHECK(g.svc.GetReplicaList({kClient, hot}).ok());
    CHECK(DisksOf(g.svc).contains(hot));  // in both tiers

    // Remove of a disk-only key; a checksum failure; a restarted store that
    // no longer has one of its files.
    const std::string gone = g.DiskOnly()[0];
    REQUIRE(g.svc.Remove({gone, false}).ok());
    const std::string bad = g.DiskOnly()[0];
    g.ReadFromDisk(bad, {{bad, Error(ErrorCode::CHECKSUM_MISMATCH, "crc")}});
    CHECK(counters().checksum_failures == 1);
    const std::string lost = g.DiskOnly()[0];
    std::vector<msg::DiskObject> kept;
    for (const auto& [k, d] : DisksOf(g.svc))
      if (k != lost) kept.push_back({k, d.second, 1});
    CHECK(g.Announce(kept).drop_keys.empty());

    const DiskMap leader = DisksOf(g.svc);
    CHECK(leader.size() == kept.size());
    for (const auto& k : {gone, bad, lost}) CHECK_FALSE(leader.contains(k));
    const std::vector<std::string> disk_only = g.DiskOnly();
    REQUIRE(!disk_only.empty());
    REQUIRE(g.log.WaitDurableFor(kWaitUs));
    if (snapshot_every == 1) {
      // The last entry's snapshot (taken after it is applied): the standby
      // below then reads the snapshot alone.
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (g.log.stats().snapshot_index != g.log.stats().entry_index &&
             std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
      REQUIRE(g.log.stats().snapshot_index == g.log.stats().entry_index);
    }

    const masterd::HaImage image = masterd::testing::FollowToEnd(g.etcd, Keys());
    CHECK(DisksOf(image) == leader);
    // The standby takes over: the same memory objects and disk replicas; the
    // disk-only keys exist, the removed one does not.
    NoRecords none;
    TakenOver next(image, &none);
    CHECK(DisksOf(next.svc) == leader);
    CHECK(next.svc.WithState([](master::MasterState& s) { return masterd::testing::Fingerprint(s); }) ==
          g.svc.WithState([](master::MasterState& s) { return masterd::testing::Fingerprint(s); }));
    CHECK(next.svc.ExistKey({kClient, disk_only[0]}).value());
    CHECK_FALSE(next.svc.ExistKey({kClient, gone}).value());
    // Its store finds the new leader and announces what its disk holds: the
    // recorded objects are re-adopted, the removed one is deleted.
    std::vector<msg::DiskObject> on_disk{{gone, kMiB, 1}};
    for (const auto& [k, d] : leader) on_disk.push_back({k, d.second, 2});
    auto re = next.svc.TierAnnounce({kClient, "s1", "d1", TierLeader::kDiskBytes, true, true,
                                     on_disk});
    REQUIRE(re.ok());
    CHECK(re->drop_keys == std::vector<std::string>{gone});
    CHECK(DisksOf(next.svc) == leader);
  }
}

TEST_CASE("an offload's disk replica is logged before its memory copy is dropped") {
  TierLeader g(1000000);
  for (int i = 0; i < 40; ++i) g.Put("k" + std::to_string(i));
  g.Drain();
  REQUIRE(g.log.WaitDurableFor(kWaitUs));
  ha::FencedLog reader(g.etcd, Keys());
  auto entries = reader.ReadAfter(0);
  REQUIRE(entries.ok());
  std::map<std::string, size_t> on_disk_at, removed_at;  // key -> record position
  size_t at = 0;
  for (const auto& e : *entries) {
    auto records = masterd::DecodeHaEntry(e.data);
    REQUIRE(records.ok());
    for (const auto& r : *records) {
      if (r.kind == masterd::HaRecord::Kind::kDiskReplica) on_disk_at.try_emplace(r.name, at);
      if (r.kind == masterd::HaRecord::Kind::kRemove) removed_at.try_emplace(r.name, at);
      ++at;
    }
  }
  REQUIRE(on_disk_at.size() == 8);
  for (const auto& [key, pos] : on_disk_at) {
    CAPTURE(key);
    REQUIRE(removed_at.contains(key));
    CHECK(pos < removed_at[key]);
  }
}

#include "masterd/ha_log.h"

#include <doctest/doctest.h>

#include <chrono>
#include <random>
#include <thread>

#include "common/test_seed.h"
#include "eviction/policy.h"
#include "ha/fake_etcd.h"
#include "master/master_test_util.h"
#include "masterd/journal_test_util.h"

using namespace mc;
using namespace mc::master;
using mc::master::testing::Client;
using mc::master::testing::Segment;
using mc::masterd::testing::Fingerprint;

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kNow = 1000000;
constexpr uint64_t kWaitUs = 10000000;  // a bound on a wait that should take milliseconds

ha::HaKeys Keys() { return *ha::HaKeys::For("pool"); }

std::unique_ptr<MasterState> NewState(StateListener* l) {
  Options o;
  o.stripe_size_bytes = kMiB;
  return std::make_unique<MasterState>(o, MakeEvictionPolicy("lru", 0), l);
}

// A leader (its HaLog as the state's listener) on a fake etcd.
struct Group {
  ManualClock clock;
  ha::FakeEtcd etcd{clock};
  ha::Election election{etcd, Keys(), "leader:1", 5};
  ha::Term term = **election.TryAcquire();
  masterd::HaLog log{etcd, Keys(), clock, {.snapshot_every_entries = 1000000}};
  std::unique_ptr<MasterState> state = NewState(&log);

  explicit Group(uint64_t snapshot_every = 1000000)
      : log(etcd, Keys(), clock, {.snapshot_every_entries = snapshot_every}) {
    log.Begin(term, masterd::HaImage());
  }
  // A standby's image, followed from the log (and snapshot) to its end.
  masterd::HaImage Follow() {
    ha::FencedLog reader(etcd, Keys());
    masterd::HaImage image;
    auto snap = reader.ReadSnapshot();
    REQUIRE(snap.ok());
    if (snap->has_value()) {
      REQUIRE(image.Restore((*snap)->data).ok());
      image.set_index((*snap)->index);
    }
    for (;;) {
      auto entries = reader.ReadAfter(image.index());
      REQUIRE(entries.ok());
      if (entries->empty()) break;
      for (const auto& e : *entries) {
        REQUIRE(e.index == image.index() + 1);
        REQUIRE(image.ApplyEntry(e.data).ok());
        image.set_index(e.index);
      }
    }
    return image;
  }
  std::string StandbyFingerprint() {
    auto fresh = NewState(nullptr);
    masterd::HaImage image = Follow();
    auto dropped = image.LoadInto(*fresh, kNow);
    REQUIRE(dropped.ok());
    return Fingerprint(*fresh);
  }
};

void Mount(MasterState& s, int i) {
  msg::SegmentDesc d = Segment("s" + std::to_string(i), 64 * kMiB);
  d.access_key = "key-" + std::to_string(i);
  REQUIRE(s.MountSegment({Client(i + 1), d}, kNow).ok());
}

}  // namespace

TEST_CASE("HA records and snapshots round-trip, and damaged entries are refused") {
  masterd::HaRecord mount{.kind = masterd::HaRecord::Kind::kMount};
  mount.segment.desc = Segment("s1", 64 * kMiB);
  mount.segment.owner = Client(3);
  masterd::HaRecord commit{.kind = masterd::HaRecord::Kind::kCommit};
  commit.object = {.key = "k", .size_bytes = 10, .complete = true, .soft_pin = true,
                   .replicas = {{{"s1", 4096, 10}}}};
  const std::string entry = masterd::EncodeHaEntry({mount, commit});
  auto back = masterd::DecodeHaEntry(entry);
  REQUIRE(back.ok());
  REQUIRE(back->size() == 2);
  CHECK((*back)[0].segment.desc.name == "s1");
  CHECK((*back)[0].segment.owner == Client(3));
  CHECK((*back)[1].object.replicas[0][0].offset == 4096);
  CHECK((*back)[1].object.soft_pin);
  for (size_t cut = 0; cut < entry.size(); ++cut) {
    CHECK_FALSE(masterd::DecodeHaEntry(entry.substr(0, cut)).ok());
  }
  CHECK_FALSE(masterd::DecodeHaEntry(entry + "x").ok());
  std::string bad_kind = entry;
  bad_kind[4] = 9;
  CHECK_FALSE(masterd::DecodeHaEntry(bad_kind).ok());
}

TEST_CASE("a standby that follows the HA log rebuilds the leader's durable state exactly") {
  Group g;
  std::mt19937_64 rng(TestSeed("ha log follow"));
  for (int i = 0; i < 3; ++i) Mount(*g.state, i);
  for (int i = 0; i < 80; ++i) {
    const std::string key = "k" + std::to_string(i);
    REQUIRE(g.state->PutStart({Client(1), key, 1 + rng() % (3 * kMiB), {1u + i % 2, i % 5 == 0}},
                              kNow).ok());
    if (i % 7 != 3) REQUIRE(g.state->PutEnd({Client(1), key}, kNow).ok());  // else in flight
    if (rng() % 4 == 0) (void)g.state->Remove({"k" + std::to_string(rng() % (i + 1)), true}, kNow);
  }
  REQUIRE(g.state->UnmountSegment({Client(3), "s2"}, kNow).ok());  // drops replicas on s2
  REQUIRE(g.log.WaitDurableFor(kWaitUs));
  CHECK(g.log.Released() == g.log.stats().appended);
  CHECK(g.StandbyFingerprint() == Fingerprint(*g.state));
  CHECK(g.log.stats().entries >= 1);
}

TEST_CASE("snapshots keep the log short and a standby starting late still catches up") {
  Group g(/*snapshot_every=*/3);
  Mount(*g.state, 0);
  for (int i = 0; i < 200; ++i) {
    const std::string key = "k" + std::to_string(i % 40);
    (void)g.state->Remove({key, true}, kNow);
    REQUIRE(g.state->PutStart({Client(1), key, 4096, {1, false}}, kNow).ok());
    REQUIRE(g.state->PutEnd({Client(1), key}, kNow).ok());
    REQUIRE(g.log.WaitDurableFor(kWaitUs));  // one entry per put: many snapshots
  }
  CHECK(g.log.stats().snapshots >= 10);
  // The sequencer applies and snapshots after the entries are released:
  // wait (bounded) until it has caught up with the last one.
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kWaitUs);
  while (g.log.stats().entry_index - g.log.stats().snapshot_index >= 3 &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::yield();
  }
  // leader key, snapshot key and its chunk, fewer than 3 entries past it
  CHECK(g.etcd.key_count() <= 6);
  CHECK(g.StandbyFingerprint() == Fingerprint(*g.state));
}

TEST_CASE("a leader whose term ended is fenced: nothing more is released") {
  Group g;
  Mount(*g.state, 0);
  REQUIRE(g.log.WaitDurableFor(kWaitUs));
  const uint64_t released = g.log.Released();
  g.clock.AdvanceUs(6000000);  // the lease runs out unrenewed
  ha::Election other(g.etcd, Keys(), "other:1", 5);
  REQUIRE(other.TryAcquire()->has_value());
  REQUIRE(g.state->PutStart({Client(1), "late", 4096, {1, false}}, kNow).ok());
  REQUIRE(g.state->PutEnd({Client(1), "late"}, kNow).ok());
  CHECK_FALSE(g.log.WaitDurableFor(kWaitUs));
  CHECK(g.log.Failed());
  CHECK(g.log.Released() == released);
  CHECK(g.Follow().objects() == 0);
}

TEST_CASE("with etcd down the leader holds its replies, and releases them once etcd is back") {
  Group g;
  Mount(*g.state, 0);
  REQUIRE(g.log.WaitDurableFor(kWaitUs));
  g.etcd.SetDown(true);
  REQUIRE(g.state->PutStart({Client(1), "k", 4096, {1, false}}, kNow).ok());
  REQUIRE(g.state->PutEnd({Client(1), "k"}, kNow).ok());
  const uint64_t ticket = g.log.stats().appended;
  CHECK_FALSE(g.log.WaitDurableFor(100000));
  CHECK(g.log.Released() < ticket);
  CHECK_FALSE(g.log.Failed());
  g.etcd.SetDown(false);
  REQUIRE(g.log.WaitDurableFor(kWaitUs));
  CHECK(g.log.Released() == ticket);
  CHECK(g.log.stats().retries >= 1);
  CHECK(g.Follow().objects() == 1);
}

TEST_CASE("objects left on a segment the log already unmounted are left out of a takeover") {
  masterd::HaImage image;
  masterd::HaRecord mount{.kind = masterd::HaRecord::Kind::kMount};
  mount.segment.desc = Segment("s1", 64 * kMiB);
  REQUIRE(image.Apply(mount).ok());
  masterd::HaRecord commit{.kind = masterd::HaRecord::Kind::kCommit};
  commit.object = {.key = "k", .size_bytes = 10, .complete = true, .replicas = {{{"s1", 0, 10}}}};
  REQUIRE(image.Apply(commit).ok());
  REQUIRE(image.Apply({.kind = masterd::HaRecord::Kind::kUnmount, .name = "s1"}).ok());
  auto state = NewState(nullptr);
  auto dropped = image.LoadInto(*state, kNow);
  REQUIRE(dropped.ok());
  CHECK(*dropped == 1);
  CHECK(state->DumpObjects(true).empty());
}

TEST_CASE("a round of PutStarts waits for its own changes and frees, not an earlier round's commit") {
  Group g;
  Mount(*g.state, 0);
  REQUIRE(g.log.WaitDurableFor(kWaitUs));
  g.etcd.SetDown(true);  // nothing more becomes durable
  const uint64_t durable = g.log.Released();
  // A round on this thread commits an object (another connection's PutEnd).
  REQUIRE(g.state->PutStart({Client(1), "a", 4096, {1, false}}, kNow).ok());
  REQUIRE(g.state->PutEnd({Client(1), "a"}, kNow).ok());
  CHECK(g.log.Ticket(1) == g.log.stats().appended);  // it reveals the commit: waits for it
  // The next round of only PutStarts on this thread changed nothing.
  REQUIRE(g.state->PutStart({Client(1), "b", 4096, {1, false}}, kNow).ok());
  CHECK(g.log.Ticket(0) <= durable);
  // A round that queued a change of its own (a mount here) waits for it.
  Mount(*g.state, 1);
  CHECK(g.log.Ticket(0) == g.log.stats().appended);
  g.etcd.SetDown(false);
}

TEST_CASE("a leader past its lease deadline releases no round, not even a read") {
  Group g;
  Mount(*g.state, 0);
  REQUIRE(g.log.WaitDurableFor(kWaitUs));
  g.log.SetLeaseDeadline(g.clock.NowUs() + 1000000);
  const uint64_t before = g.log.Ticket(0);
  CHECK(before <= g.log.Released());  // a round that revealed nothing goes out at once
  CHECK_FALSE(g.log.Failed());
  g.clock.AdvanceUs(1000000);
  const uint64_t after = g.log.Ticket(0);
  CHECK(after > g.log.Released());
  CHECK(g.log.Failed());
}

// The HA log with several entries in flight (ha_log.h): entries that land
// out of order are released in log order, a failed middle entry makes the
// leader step down with nothing after it released and the next leader drops
// what lies past the gap, a deposed leader's entries in flight are refused,
// and a busy log cuts bigger entries. A gate in front of the fake etcd holds
// chosen entries' txns, so every interleaving is forced, not hoped for.
#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "common/clock.h"
#include "eviction/policy.h"
#include "ha/election.h"
#include "ha/fake_etcd.h"
#include "ha/fenced_log.h"
#include "master/master_test_util.h"
#include "masterd/ha_follow.h"
#include "masterd/ha_image.h"
#include "masterd/ha_log.h"

using namespace mc;
using mc::master::testing::Client;
using mc::master::testing::Segment;

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kNow = 1000000;
constexpr auto kWait = std::chrono::seconds(10);  // bounds a wait that takes milliseconds
constexpr uint64_t kWaitUs = 10000000;
constexpr int64_t kTtlS = 5;

ha::HaKeys Keys() { return *ha::HaKeys::For("pool"); }

std::string EntryKey(uint64_t index) {
  ha::FakeEtcd unused{SystemClock::Instance()};
  return ha::FencedLog(unused, Keys()).EntryKey(index);
}

// An EtcdKv in front of a FakeEtcd that holds the txns putting chosen keys
// until the test lets each through, as it is or failed with a given error.
class GatedEtcd final : public ha::EtcdKv {
 public:
  explicit GatedEtcd(ha::FakeEtcd& etcd) : etcd_(etcd) {}

  void Hold(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    held_.insert(key);
  }
  // Lets the held txn of `key` go on: to etcd, or failed with `fail`.
  void Release(const std::string& key, Status fail = Status::Ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    held_.erase(key);
    if (!fail.ok()) fail_.emplace(key, fail);
    cv_.notify_all();
  }
  // Lets the held txn of `key` land, then sends it once more and answers
  // with that second reply (the entry exists: refused), as an etcd client
  // that timed out and tried another member does.
  void ReleaseResent(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    held_.erase(key);
    resent_.insert(key);
    cv_.notify_all();
  }
  // Waits until a txn putting `key` has arrived (held or not) / finished.
  bool WaitArrived(const std::string& key) { return WaitIn(arrived_, key); }
  bool WaitFinished(const std::string& key) { return WaitIn(finished_, key); }

  Result<ha::TxnResult> Commit(const ha::Txn& txn) override {
    std::string key;
    for (const ha::TxnOp& op : txn.success) {
      if (op.kind == ha::TxnOp::Kind::kPut) key = op.key;
    }
    std::optional<Status> fail;
    bool resend = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      arrived_.insert(key);
      cv_.notify_all();
      cv_.wait_for(lock, kWait, [&] { return !held_.contains(key); });
      if (auto it = fail_.find(key); it != fail_.end()) {
        fail = it->second;
        fail_.erase(it);
      }
      resend = resent_.erase(key) != 0;
    }
    if (resend) (void)etcd_.Commit(txn);
    Result<ha::TxnResult> out = fail ? Result<ha::TxnResult>(*fail) : etcd_.Commit(txn);
    std::lock_guard<std::mutex> lock(mu_);
    finished_.insert(key);
    cv_.notify_all();
    return out;
  }
  Result<ha::RangeResult> Range(const std::string& key, const std::string& range_end,
                                int64_t limit) override {
    return etcd_.Range(key, range_end, limit);
  }
  Result<int64_t> LeaseGrant(int64_t ttl_s) override { return etcd_.LeaseGrant(ttl_s); }
  Result<int64_t> LeaseKeepAlive(int64_t id) override { return etcd_.LeaseKeepAlive(id); }
  Status LeaseRevoke(int64_t id) override { return etcd_.LeaseRevoke(id); }
  Status Compact(int64_t revision) override { return etcd_.Compact(revision); }
  Result<ha::StatusResult> MemberStatus() override { return etcd_.MemberStatus(); }

 private:
  bool WaitIn(const std::set<std::string>& set, const std::string& key) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWait, [&] { return set.contains(key); });
  }
  ha::FakeEtcd& etcd_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> held_, arrived_, finished_, resent_;
  std::map<std::string, Status> fail_;
};

// Waits (bounded) until `done` holds; for state a log thread sets right
// after a gate event.
template <typename F>
bool Eventually(F&& done) {
  const auto until = std::chrono::steady_clock::now() + kWait;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

// A leader with `in_flight` shippers, all through the gate.
struct Pipeline {
  // min_records 1 and no bar of the records in flight: an entry per
  // record while others are in flight.
  explicit Pipeline(uint32_t in_flight, uint32_t min_records = 1, bool bar_in_flight = false)
      : log(gate, Keys(), clock,
            {.snapshot_every_entries = 1000000, .entries_in_flight = in_flight,
             .pipeline_min_records = min_records, .bar_in_flight = bar_in_flight}) {
    log.Begin(term, masterd::HaImage());
  }
  // Mounts segment `i` (one record).
  void Mount(int i) {
    REQUIRE(state->MountSegment({Client(i + 1), Segment("s" + std::to_string(i), 64 * kMiB)},
                                kNow).ok());
  }
  // Mounts segment `i` and waits until its entry `index` reached the gate.
  void MountAs(int i, uint64_t index) {
    Mount(i);
    REQUIRE(gate.WaitArrived(EntryKey(index)));
  }
  // Entries 1 and 2 (segments s0, s1) in flight, held at the gate.
  void HoldTwoInFlight() {
    gate.Hold(EntryKey(1));
    gate.Hold(EntryKey(2));
    MountAs(0, 1);
    MountAs(1, 2);
  }
  // A standby's image followed from the log as far as it is committed.
  masterd::HaImage Follow() {
    ha::FencedLog reader(etcd, Keys());
    masterd::HaImage image;
    bool caught_up = false;
    while (!caught_up) REQUIRE(masterd::FollowHaLog(reader, image, &caught_up).ok());
    return image;
  }
  ManualClock clock;
  ha::FakeEtcd etcd{clock};
  GatedEtcd gate{etcd};
  ha::Election election{etcd, Keys(), "a:1", kTtlS};
  ha::Term term = **election.TryAcquire();
  masterd::HaLog log;
  std::unique_ptr<master::MasterState> state = [this] {
    master::Options o;
    o.stripe_size_bytes = kMiB;
    return std::make_unique<master::MasterState>(o, master::MakeEvictionPolicy("lru", 0), &log);
  }();
};

}  // namespace

TEST_CASE("entries that land out of order are released in log order") {
  Pipeline p(4);
  p.gate.Hold(EntryKey(1));
  p.MountAs(0, 1);
  p.MountAs(1, 2);
  REQUIRE(p.gate.WaitFinished(EntryKey(2)));
  REQUIRE(Eventually([&] { return p.log.stats().entries == 1; }));
  // Entry 2 is in etcd, but its record waits for entry 1: nothing released,
  // and a standby stops at the gap.
  CHECK(p.log.Released() == 0);
  CHECK(p.Follow().index() == 0);
  CHECK(*ha::FencedLog(p.etcd, Keys()).LastIndex() == 0);
  p.gate.Release(EntryKey(1));
  REQUIRE(p.log.WaitDurableFor(kWaitUs));
  CHECK(p.log.Released() == 2);
  const masterd::HaImage image = p.Follow();
  CHECK(image.index() == 2);
  CHECK(image.segments() == 2);
}

TEST_CASE("an entry etcd did not answer is retried while later ones land, then all are released") {
  Pipeline p(4);
  p.gate.Hold(EntryKey(1));
  p.MountAs(0, 1);
  p.MountAs(1, 2);
  p.MountAs(2, 3);
  p.gate.Release(EntryKey(1), Error(ErrorCode::RPC_FAIL, "no member answered"));
  REQUIRE(p.log.WaitDurableFor(kWaitUs));
  CHECK(p.log.Released() == 3);
  CHECK(p.log.stats().retries >= 1);
  CHECK_FALSE(p.log.Failed());
  CHECK(p.Follow().segments() == 3);
}

TEST_CASE("an entry the etcd client sent twice by itself, refused as existing, is ours and released") {
  Pipeline p(2);
  p.gate.Hold(EntryKey(1));
  p.MountAs(0, 1);
  p.MountAs(1, 2);
  p.gate.ReleaseResent(EntryKey(1));
  REQUIRE(p.log.WaitDurableFor(kWaitUs));
  CHECK(p.log.Released() == 2);
  CHECK_FALSE(p.log.Failed());
  CHECK(p.Follow().segments() == 2);
}

TEST_CASE("a failed middle entry: the leader steps down, nothing after it is released, and the "
          "next leader drops what lies past the gap") {
  Pipeline p(4);
  p.gate.Hold(EntryKey(2));
  p.MountAs(0, 1);
  REQUIRE(p.log.WaitDurableFor(kWaitUs));
  p.MountAs(1, 2);
  p.MountAs(2, 3);
  p.MountAs(3, 4);
  REQUIRE(p.gate.WaitFinished(EntryKey(3)));
  REQUIRE(p.gate.WaitFinished(EntryKey(4)));
  p.gate.Release(EntryKey(2), Error(ErrorCode::INVALID_PARAMS, "etcd refused it"));
  REQUIRE(Eventually([&] { return p.log.Failed(); }));
  CHECK(p.log.Released() == 1);
  // Entries 3 and 4 landed past the gap; the committed log ends at 1.
  ha::FencedLog reader(p.etcd, Keys());
  CHECK(reader.ReadAfter(1)->size() == 2);
  CHECK(*reader.LastIndex() == 1);
  masterd::HaImage image = p.Follow();
  CHECK(image.index() == 1);
  CHECK(image.segments() == 1);

  // The next leader reads to the gap, drops what lies past it, and writes
  // its own entry 2 where the old leader's failed.
  p.clock.AdvanceUs((kTtlS + 1) * 1000000);
  ha::Election next(p.etcd, Keys(), "b:1", kTtlS);
  auto won = next.TryAcquire();
  REQUIRE(won.ok());
  REQUIRE(won->has_value());
  CHECK(reader.DropAfter(p.term, image.index()).status().code() ==
        ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS);  // not under the old term: fenced
  auto dropped = reader.DropAfter(**won, image.index());
  REQUIRE(dropped.ok());
  CHECK(*dropped == 2);
  masterd::HaLog log_b(p.etcd, Keys(), p.clock, {.snapshot_every_entries = 1000000});
  master::Options o;
  o.stripe_size_bytes = kMiB;
  master::MasterState state_b(o, master::MakeEvictionPolicy("lru", 0), &log_b);
  REQUIRE(image.LoadInto(state_b, kNow).ok());
  log_b.Begin(**won, std::move(image));
  REQUIRE(state_b.MountSegment({Client(9), Segment("s9", 64 * kMiB)}, kNow).ok());
  REQUIRE(log_b.WaitDurableFor(kWaitUs));
  const masterd::HaImage after = p.Follow();
  CHECK(after.index() == 2);
  CHECK(after.segments() == 2);  // s0 and s9; never s2 or s3
}

TEST_CASE("a deposed leader's entries in flight are refused by etcd") {
  Pipeline p(4);
  p.HoldTwoInFlight();
  p.clock.AdvanceUs((kTtlS + 1) * 1000000);  // the lease runs out unrenewed
  ha::Election other(p.etcd, Keys(), "b:1", kTtlS);
  REQUIRE(other.TryAcquire()->has_value());
  p.gate.Release(EntryKey(2));
  p.gate.Release(EntryKey(1));
  REQUIRE(p.gate.WaitFinished(EntryKey(1)));
  REQUIRE(p.gate.WaitFinished(EntryKey(2)));
  REQUIRE(Eventually([&] { return p.log.Failed(); }));
  CHECK(p.log.Released() == 0);
  CHECK(ha::FencedLog(p.etcd, Keys()).ReadAfter(0)->empty());
}

TEST_CASE("while every shipper is busy the queue grows into one bigger entry") {
  Pipeline p(2);
  p.HoldTwoInFlight();
  // Entry 1 was cut alone in etcd's hands, entry 2 beside it.
  CHECK(p.log.stats().cuts_by_in_flight == std::vector<uint64_t>{1, 1});
  for (int i = 2; i < 22; ++i) p.Mount(i);
  p.gate.Release(EntryKey(1));
  p.gate.Release(EntryKey(2));
  REQUIRE(p.log.WaitDurableFor(kWaitUs));
  CHECK(p.log.stats().entries == 3);  // 1 + 1 + 20 records
  CHECK(p.log.stats().in_flight_max == 2);
  CHECK(p.Follow().segments() == 22);
}

TEST_CASE("with an entry in flight a few records wait for it; a longer queue gets an entry of its own") {
  Pipeline p(4, /*min_records=*/4);
  p.gate.Hold(EntryKey(1));
  p.MountAs(0, 1);
  for (int i = 1; i < 4; ++i) p.Mount(i);  // 3 wait: not worth a second txn yet
  p.Mount(4);                              // 4: entry 2 takes them all
  REQUIRE(p.gate.WaitFinished(EntryKey(2)));
  CHECK(p.log.Released() == 0);
  p.gate.Release(EntryKey(1));
  REQUIRE(p.log.WaitDurableFor(kWaitUs));
  CHECK(p.log.stats().entries == 2);
  CHECK(p.Follow().segments() == 5);
}

TEST_CASE("with entries in flight the next waits for kHaPipelineBarFactor times what they hold") {
  // Many writers: a queue that long gets an entry of its own, a shorter one
  // waits and grows (fewer, bigger etcd txns). Entry n holds bar(n) records,
  // bar(n) = factor x every record before it (all held in flight); had one
  // been cut short, the rest would make a fifth entry.
  Pipeline p(4, /*min_records=*/1, /*bar_in_flight=*/true);
  for (uint64_t e = 1; e <= 4; ++e) p.gate.Hold(EntryKey(e));
  p.MountAs(0, 1);  // none in flight: cut at once
  int next = 1;
  for (uint64_t e = 2; e <= 4; ++e) {
    const auto bar = static_cast<int>(masterd::kHaPipelineBarFactor) * next;
    for (int i = 0; i < bar; ++i) p.Mount(next++);
    REQUIRE(p.gate.WaitArrived(EntryKey(e)));
  }
  for (uint64_t e = 1; e <= 4; ++e) p.gate.Release(EntryKey(e));
  REQUIRE(p.log.WaitDurableFor(kWaitUs));
  CHECK(p.log.stats().entries == 4);
  CHECK(p.log.stats().cuts_by_in_flight == std::vector<uint64_t>{1, 1, 1, 1});
  CHECK(p.Follow().segments() == static_cast<size_t>(next));
}

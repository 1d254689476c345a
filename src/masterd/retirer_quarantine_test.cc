// The hole a failed RETIRE left with one-sided RDMA writers, end to end on a
// real store's epochs (mooncake-protocol(7), "RDMA direct reads"): the
// master could not retire a removed object's range, handed the space to the
// next put, whose writer wrote it one-sided (no epoch moves, as an RDMA
// WRITE), and a client's cached seal of the removed object matched the new
// bytes. Now the range is quarantined (master/master_state_quarantine.cc).
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <unistd.h>

#include "common/clock.h"
#include "dataserver/store_fixture.h"
#include "masterd/journal.h"
#include "masterd/journal_test_util.h"
#include "masterd/retirer.h"
#include "masterd/service.h"
#include "masterd/service_test_util.h"
#include "net/socket.h"
#include "transfer/access.h"

using namespace mc;
using masterd::testing::Mount;

namespace {

constexpr uint64_t kSize = 5000;

// A store whose data port refuses RETIREs while `refuse` is set (the master
// cannot retire there: a store that timed out, a partition of the master
// alone), and reads and writes that bypass its epochs like RDMA's.
struct Cluster {
  ManualClock clock;
  std::atomic<bool> refuse{true};
  transfer::testing::Store store = transfer::testing::Store::Make(
      64ull << 20,
      [this, inner = transfer::CapabilityCheck("key-1", 9, [this] { return clock.UnixMs(); })](
          transfer::OpKind op, uint64_t offset, uint64_t len,
          const transfer::Grant& grant) -> Status {
        if (op == transfer::OpKind::kRetire && refuse.load()) {
          return Error(ErrorCode::TRANSFER_FAIL, "test: retire refused");
        }
        return inner(op, offset, len, grant);
      });
  const masterd::Retirer::Options options;
  std::unique_ptr<masterd::Retirer> retirer;
  std::unique_ptr<masterd::MasterService> master;  // after its retirer: destroyed first

  // `retire_at`: the endpoint the master retires at ("": the store's);
  // `journal`: the master's (none: it keeps its state in memory only).
  explicit Cluster(masterd::Retirer::Options o = {.tcp = {},
                                                  .max_wait_us = masterd::kDefaultRetireWaitUs,
                                                  .backoff_us = 1000},
                   std::string retire_at = "", masterd::Journal* journal = nullptr)
      : options(std::move(o)) {
    StartMaster(journal);
    auto m = Mount("s1", "key-1");
    m.segment.endpoint = !retire_at.empty() ? retire_at
                                            : "127.0.0.1:" + std::to_string(store.endpoint.port);
    REQUIRE(svc().MountSegment(m).ok());
  }
  masterd::MasterService& svc() { return *master; }
  // A master process starting (master_daemon.cc): a retirer and a service
  // of its own, the state loaded from `journal` when there is one.
  void StartMaster(masterd::Journal* journal) {
    master.reset();
    retirer = std::make_unique<masterd::Retirer>(options);
    master = std::make_unique<masterd::MasterService>(MasterConfig{}, clock, journal);
    master->SetRetirer(retirer.get());
    if (journal == nullptr) return;
    auto loaded = master->WithState(
        [&](master::MasterState& state) { return journal->LoadInto(state, clock.NowUs()); });
    REQUIRE(loaded.ok());
    master->AdoptLoadedSegments();
  }
  // A put whose writer writes one-sided (an RDMA WRITE: no epoch moves).
  uint64_t PutOneSided(const std::string& key, char fill) {
    auto start = svc().PutStart({{1, 2}, key, kSize, {}});
    REQUIRE(start.ok());
    const uint64_t off = start->replicas.at(0).buffers.at(0).offset;
    std::memset(store.segment->base() + off, fill, kSize);
    REQUIRE(svc().PutEnd({{1, 2}, key}).ok());
    return off;
  }
  // A cached direct read at `off` under `seal`: "" when stale.
  std::string CachedRead(uint64_t off, uint64_t seal) {
    std::string got(kSize, '\0');
    const uint64_t s = store.segment->epochs().SealedRead(
        off, kSize, seal, [&] { std::memcpy(got.data(), store.segment->base() + off, kSize); });
    return s == 0 ? std::string() : got;
  }
};

}  // namespace

TEST_CASE("a removed object's cached seal never reads the next object written one-sided "
          "where its retire failed") {
  Cluster c;
  const uint64_t off = c.PutOneSided("old", 'o');
  const uint64_t seal = c.store.segment->epochs().Seal(off, kSize);  // a client caches it
  REQUIRE(seal != 0);
  REQUIRE(c.CachedRead(off, seal) == std::string(kSize, 'o'));
  REQUIRE(c.svc().Remove({"old", false}).ok());  // its RETIRE is refused
  CHECK(c.retirer->stats().failed >= 1);
  CHECK(c.svc().RetireStats().quarantine.bytes > 0);
  // The space the old object had goes to no new object while it could match.
  for (int i = 0; i < 4; ++i) {
    const uint64_t at = c.PutOneSided("new" + std::to_string(i), static_cast<char>('a' + i));
    CHECK(at != off);
    const std::string read = c.CachedRead(off, seal);
    CHECK((read.empty() || read == std::string(kSize, 'o')));  // stale, or the old bytes
  }
}

TEST_CASE("a range whose retire failed is reused once a retry retired it") {
  Cluster c;
  const uint64_t off = c.PutOneSided("old", 'o');
  REQUIRE(c.svc().Remove({"old", false}).ok());
  REQUIRE(c.svc().RetireStats().quarantine.ranges == 1);
  c.refuse = false;  // the store answers again
  // The next pass to that store (another removal there) carries the retry.
  // (backoff_us is 1 ms; the first pass may still fall inside it.)
  for (int i = 0; i < 100 && c.retirer->stats().recovered == 0; ++i) {
    c.PutOneSided("other", 'x');
    REQUIRE(c.svc().Remove({"other", false}).ok());
  }
  REQUIRE(c.retirer->stats().recovered >= 1);  // and the 'other' ranges refused in the backoff
  (void)c.svc().Tick();  // applies any outcome not applied yet: the quarantine is lifted
  CHECK(c.svc().RetireStats().quarantine.ranges == 0);
  CHECK(c.store.segment->epochs().Seal(off, kSize) == 0);  // retired on the store
  CHECK(c.PutOneSided("new", 'n') == off);
}

TEST_CASE("a reply that gave up waiting for a retire quarantines the range still in flight") {
  // A port that accepts (its backlog) and never answers: the RETIRE hangs
  // past the reply's wait.
  auto fd = net::ListenTcp("127.0.0.1", 0, 16);
  REQUIRE(fd.ok());
  masterd::Retirer::Options o;
  o.max_wait_us = 20000;
  o.tcp.connect_timeout_us = 200000;
  o.tcp.tuning.io_timeout_us = 200000;
  Cluster c(std::move(o), "127.0.0.1:" + std::to_string(net::LocalPort(*fd)));
  const uint64_t off = c.PutOneSided("old", 'o');
  REQUIRE(c.svc().Remove({"old", false}).ok());  // answered after 20 ms, outcome unknown
  CHECK(c.retirer->stats().late_replies == 1);
  CHECK(c.svc().RetireStats().quarantine.ranges == 1);
  CHECK(c.PutOneSided("new", 'n') != off);
  ::close(*fd);
}

TEST_CASE("a put that evicts where the victims' retire fails is never handed their space") {
  // The put evicts and places in one call, before the RETIRE of what it
  // evicted was even sent: its reply is checked once the failure is known.
  Cluster c;
  constexpr uint64_t kBig = 16ull << 20;  // four fill the 64 MiB segment
  std::vector<std::pair<std::string, uint64_t>> olds;
  for (int i = 0; i < 4; ++i) {
    const std::string key = "v" + std::to_string(i);
    auto start = c.svc().PutStart({{1, 2}, key, kBig, {}});
    REQUIRE(start.ok());
    olds.emplace_back(key, start->replicas.at(0).buffers.at(0).offset);
    REQUIRE(c.svc().PutEnd({{1, 2}, key}).ok());
  }
  auto next = c.svc().PutStart({{1, 2}, "next", kBig, {}});
  CHECK(c.svc().RetireStats().quarantine.bytes >= kBig);  // the victims'
  if (!next.ok()) {
    CHECK(next.status().code() == ErrorCode::NO_AVAILABLE_HANDLE);
    return;
  }
  const uint64_t at = next->replicas.at(0).buffers.at(0).offset;
  for (const auto& [key, off] : olds) {
    if (c.svc().GetReplicaList({{1, 2}, key}).ok()) continue;  // not evicted
    CHECK((at + kBig <= off || off + kBig <= at));
  }
}

TEST_CASE("a task's target is never placed in a range whose retire failed") {
  // A move task writes its target like a put; a client's cached seal of
  // the removed object there must not match it. (TaskStart does not evict
  // for its targets, so space freed in the same call, which
  // RefuseQuarantined also checks a task's reply for, does not arise.)
  Cluster c;
  constexpr uint64_t kBig = 16ull << 20;  // four fill s1's 64 MiB
  msg::MountSegmentRequest source = Mount("s0", "key-0");
  source.client = {3, 4};
  REQUIRE(c.svc().MountSegment(source).ok());
  auto put_on = [&](const std::string& key, const std::string& segment) {
    msg::PutOptions on;
    on.placement.preferred_segments = {segment};
    auto start = c.svc().BatchPutStartEx({{{{1, 2}, key, kBig, on}}});
    REQUIRE(start.ok());
    REQUIRE(start->at(0).status.ok());
    const msg::BufferDesc b = start->at(0).value.replicas.at(0).buffers.at(0);
    REQUIRE(b.segment_name == segment);
    REQUIRE(c.svc().PutEnd({{1, 2}, key}).ok());
    return b.offset;
  };
  uint64_t removed_at = 0;
  for (int i = 0; i < 4; ++i) {
    const uint64_t off = put_on("v" + std::to_string(i), "s1");
    if (i == 1) removed_at = off;
  }
  REQUIRE(c.svc().Remove({"v1", false}).ok());  // its RETIRE is refused
  REQUIRE(c.svc().RetireStats().quarantine.bytes >= kBig);
  put_on("moving", "s0");
  auto id = c.svc().CreateMoveTask({{5, 6}, "moving", "s0", "s1"});
  REQUIRE(id.ok());
  auto start = c.svc().TaskStart({{5, 6}, *id});
  if (start.ok()) {
    REQUIRE(start->targets.size() == 1);
    const msg::BufferDesc& t = start->targets[0].buffers.at(0);
    CHECK_FALSE((t.segment_name == "s1" && t.offset < removed_at + kBig &&
                 removed_at < t.offset + t.size_bytes));
  } else {
    CHECK(start.status().code() == ErrorCode::NO_AVAILABLE_HANDLE);
    auto info = c.svc().QueryTask({{7, 7}, *id});
    REQUIRE(info.ok());
    CHECK(info->task_status() != msg::TaskStatus::kSuccess);
  }
  auto moving = c.svc().GetReplicaList({{1, 2}, "moving"});
  REQUIRE(moving.ok());
  CHECK(moving->replicas.at(0).buffers.at(0).segment_name == "s0");  // not moved
}

TEST_CASE("a restarted master retires the free space before it hands any out") {
  // The quarantine of a range whose RETIRE failed lives in the master's
  // memory. After a restart from the journal that range is free again, and
  // a client may still cache the removed object's seal there.
  masterd::testing::TempDb db;
  const uint64_t stripe = MasterConfig{}.stripe_size_bytes;
  auto journal = masterd::Journal::Open(db.path, stripe);
  REQUIRE(journal.ok());
  Cluster c({.tcp = {}, .max_wait_us = masterd::kDefaultRetireWaitUs, .backoff_us = 1000}, "",
            journal->get());
  const uint64_t off = c.PutOneSided("old", 'o');
  const uint64_t seal = c.store.segment->epochs().Seal(off, kSize);  // a client caches it
  REQUIRE(seal != 0);
  REQUIRE(c.svc().Remove({"old", false}).ok());  // its RETIRE is refused: quarantined
  REQUIRE(c.svc().RetireStats().quarantine.ranges == 1);
  REQUIRE((*journal)->WaitDurable().ok());
  c.master.reset();  // the master stops; the store keeps running
  journal->reset();
  auto again = masterd::Journal::Open(db.path, stripe);
  REQUIRE(again.ok());

  SUBCASE("the store answers: the old seal is void before the space is used again") {
    c.refuse = false;
    c.StartMaster(again->get());
    const auto retired = c.svc().RetireFreeSpace();
    CHECK(retired.ranges >= 1);
    CHECK(retired.quarantined == 0);
    CHECK(retired.quarantined_segments == 0);
    CHECK(c.store.segment->epochs().Seal(off, kSize) == 0);  // retired on the store
    CHECK(c.PutOneSided("new", 'n') == off);  // the space is handed out again
    CHECK(c.CachedRead(off, seal).empty());    // and the old seal matches nothing
  }
  SUBCASE("the store still refuses: its free space is quarantined until the seals expired") {
    c.StartMaster(again->get());
    const auto retired = c.svc().RetireFreeSpace();
    CHECK(retired.ranges >= 1);
    CHECK(retired.quarantined >= 1);
    CHECK(retired.quarantined_segments == 1);
    auto put = c.svc().PutStart({{1, 2}, "new", kSize, {}});
    CHECK(put.status().code() == ErrorCode::NO_AVAILABLE_HANDLE);
    for (uint64_t waited = 0; waited <= masterd::kRetireQuarantineUs; waited += 5000000) {
      c.clock.AdvanceUs(5000000);
      REQUIRE(c.svc().Ping(msg::PingRequest{{1, 2}}).ok());  // the store stays alive
      (void)c.svc().Tick();
    }
    CHECK(c.svc().RetireStats().quarantine.ranges == 0);
    CHECK(c.PutOneSided("new", 'n') == off);
  }
}

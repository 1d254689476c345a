// Fencing across an HA failover, with the real master service on a fake
// etcd and the store's grant check and term fence: a put the old leader
// started (not in the log) loses its space to the new leader, and its
// writer's grant stops working at the store once the new leader's first
// grant was used there.
#include <doctest/doctest.h>

#include <memory>

#include "common/capability.h"
#include "common/clock.h"
#include "ha/election.h"
#include "ha/fake_etcd.h"
#include "ha/fenced_log.h"
#include "masterd/ha_image.h"
#include "masterd/ha_log.h"
#include "masterd/service.h"
#include "masterd/service_test_util.h"
#include "transfer/access.h"
#include "transfer/term_fence.h"

using namespace mc;

namespace {

constexpr uint64_t kWaitUs = 10000000;  // bounds a wait that takes milliseconds
constexpr int64_t kTtlS = 5;
const msg::ClientId kWriterA{1, 7}, kWriterB{1, 8};

ha::HaKeys Keys() { return *ha::HaKeys::For("pool"); }

// One master of the group: its log, its service, and its term once it leads.
struct Member {
  Member(ha::FakeEtcd& etcd, const Clock& clock, const char* name)
      : election(etcd, Keys(), name, kTtlS),
        log(etcd, Keys(), clock, {.snapshot_every_entries = 1000000}),
        service(MasterConfig{}, clock, &log) {}
  // Wins the election, reads the log into its state, signs with its term.
  void Lead(ha::FakeEtcd& etcd, uint64_t now_us) {
    auto won = election.TryAcquire();
    REQUIRE(won.ok());
    REQUIRE(won->has_value());
    term = **won;
    ha::FencedLog reader(etcd, Keys());
    masterd::HaImage image;
    auto entries = reader.ReadAfter(0);
    REQUIRE(entries.ok());
    for (const auto& e : *entries) {
      REQUIRE(image.ApplyEntry(e.data).ok());
      image.set_index(e.index);
    }
    REQUIRE(service.WithState([&](master::MasterState& s) { return image.LoadInto(s, now_us); })
                .ok());
    service.AdoptLoadedSegments();
    service.SetGrantTerm(static_cast<uint64_t>(term.revision));
    log.Begin(term, std::move(image));
  }
  ha::Election election;
  masterd::HaLog log;
  masterd::MasterService service;
  ha::Term term;
};

// A group whose first leader `a` has mounted segment "s1" of the store.
struct FirstLeader {
  ManualClock clock;
  ha::FakeEtcd etcd{clock};
  Member a{etcd, clock, "a:1"};
  FirstLeader() {
    a.Lead(etcd, clock.NowUs());
    REQUIRE(a.service.MountSegment(masterd::testing::Mount("s1", "secret-1")).ok());
  }
};

// The grant a client presents for buffer `b`.
transfer::Grant GrantOf(const msg::BufferDesc& b) {
  transfer::Grant g{b.offset, b.size_bytes, b.capability_expiry_unix_ms, b.capability};
  g.term = b.capability_term;
  return g;
}

// The store's side: the grant check of segment "s1" and its fence.
struct StoreSide {
  transfer::AccessCheck check = transfer::CapabilityCheck("secret-1", 9, [this] { return now_ms; });
  transfer::TermFence fence;
  uint64_t now_ms = 0;
  // What TcpDataServer does before a WRITE's bytes land: the grant, then the term.
  Status Write(const msg::BufferDesc& b) {
    const transfer::Grant g = GrantOf(b);
    MC_RETURN_IF_ERROR(check(transfer::OpKind::kWrite, b.offset, b.size_bytes, g));
    if (!fence.Enter(g.term)) return Error(ErrorCode::INVALID_WRITE, "older term");
    return Status::Ok();
  }
};

}  // namespace

TEST_CASE("after a failover the old leader's write grant is refused once the new leader's is used") {
  FirstLeader g;
  ManualClock& clock = g.clock;
  ha::FakeEtcd& etcd = g.etcd;
  Member& a = g.a;
  REQUIRE(a.log.WaitDurableFor(kWaitUs));

  StoreSide store;
  store.now_ms = clock.UnixMs();
  auto started = a.service.PutStart({kWriterA, "in-flight", 4096, {}});
  REQUIRE(started.ok());
  const msg::BufferDesc old_buf = started->replicas.at(0).buffers.at(0);
  CHECK(old_buf.capability_term == static_cast<uint64_t>(a.term.revision));
  REQUIRE(store.Write(old_buf).ok());  // the old writer's first piece lands

  // Leader a dies (its lease runs out); b takes over from the log, which
  // holds the mount but not the unfinished put.
  clock.AdvanceUs((kTtlS + 1) * 1000000ull);
  Member b(etcd, clock, "b:1");
  b.Lead(etcd, clock.NowUs());
  CHECK(b.term.revision > a.term.revision);
  auto pong = b.service.Ping({kWriterA});
  REQUIRE(pong.ok());
  CHECK(pong->term == static_cast<uint64_t>(b.term.revision));

  // b hands the same space to another put: nothing tells it a was writing there.
  store.now_ms = clock.UnixMs();
  auto other = b.service.PutStart({kWriterB, "other", 4096, {}});
  REQUIRE(other.ok());
  const msg::BufferDesc new_buf = other->replicas.at(0).buffers.at(0);
  CHECK(new_buf.offset == old_buf.offset);
  CHECK(new_buf.capability_term == static_cast<uint64_t>(b.term.revision));
  REQUIRE(store.Write(new_buf).ok());

  // The old grant still verifies (unexpired, right key) but its term is over.
  Status late = store.Write(old_buf);
  CHECK(late.code() == ErrorCode::INVALID_WRITE);
  // The old writer's PutEnd reaches b, which never heard of the put, and its
  // revoke does not touch b's put of the same space.
  CHECK_FALSE(b.service.PutEnd({kWriterA, "in-flight"}).ok());
  (void)b.service.PutRevoke({kWriterA, "in-flight"});
  REQUIRE(b.service.PutEnd({kWriterB, "other"}).ok());
  auto got = b.service.GetReplicaList({kWriterB, "other"});
  REQUIRE(got.ok());
  CHECK(got->replicas.at(0).buffers.at(0).offset == new_buf.offset);
  CHECK_FALSE(b.service.GetReplicaList({kWriterA, "in-flight"}).ok());
}

TEST_CASE("a store learns the new term from a Ping before any grant of it and refuses old reads") {
  FirstLeader g;
  ManualClock& clock = g.clock;
  ha::FakeEtcd& etcd = g.etcd;
  Member& a = g.a;
  REQUIRE(a.service.PutStart({kWriterA, "k", 4096, {}}).ok());
  REQUIRE(a.service.PutEnd({kWriterA, "k"}).ok());
  REQUIRE(a.log.WaitDurableFor(kWaitUs));
  auto got = a.service.GetReplicaList({kWriterA, "k"});
  REQUIRE(got.ok());
  const msg::BufferDesc leased = got->replicas.at(0).buffers.at(0);

  clock.AdvanceUs((kTtlS + 1) * 1000000ull);
  Member b(etcd, clock, "b:1");
  b.Lead(etcd, clock.NowUs());
  StoreSide store;
  store.now_ms = clock.UnixMs();
  auto pong = b.service.Ping({{1, 2}});
  REQUIRE(pong.ok());
  store.fence.Raise(pong->term);  // SegmentHost::Heartbeat
  const transfer::Grant old = GrantOf(leased);
  CHECK(store.check(transfer::OpKind::kRead, leased.offset, 4096, old).ok());
  CHECK_FALSE(store.fence.Enter(old.term).has_value());
  // The object itself survived the failover: b grants a fresh read of it.
  auto again = b.service.GetReplicaList({kWriterA, "k"});
  REQUIRE(again.ok());
  CHECK(store.fence.Enter(again->replicas.at(0).buffers.at(0).capability_term).has_value());
}

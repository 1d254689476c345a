#include "ha/election.h"

#include <doctest/doctest.h>

#include "ha/fake_etcd.h"

namespace mc::ha {

namespace {
HaKeys Keys() { return *HaKeys::For("pool"); }
}  // namespace

TEST_CASE("only one of two masters wins the leader key, and the other sees its address") {
  ManualClock clock;
  FakeEtcd etcd(clock);
  Election a(etcd, Keys(), "a:50051", 5), b(etcd, Keys(), "b:50051", 5);
  auto ta = a.TryAcquire();
  REQUIRE(ta.ok());
  REQUIRE(ta->has_value());
  auto tb = b.TryAcquire();
  REQUIRE(tb.ok());
  CHECK_FALSE(tb->has_value());
  auto leader = b.Leader();
  REQUIRE(leader.ok());
  REQUIRE(leader->has_value());
  CHECK((*leader)->value == "a:50051");
  CHECK(Keys().leader == "mooncake-store/pool/master_view");
}

TEST_CASE("a leader that stops renewing loses the key after its TTL and the next term is higher") {
  ManualClock clock;
  FakeEtcd etcd(clock);
  Election a(etcd, Keys(), "a:1", 5), b(etcd, Keys(), "b:1", 5);
  Term first = **a.TryAcquire();
  clock.AdvanceUs(4000000);
  CHECK(*a.KeepAlive(first));
  clock.AdvanceUs(4000000);  // renewed at 4 s: still held at 8 s
  CHECK_FALSE(b.TryAcquire()->has_value());
  clock.AdvanceUs(2000000);  // 10 s: the lease ran out at 9 s
  CHECK_FALSE(*a.KeepAlive(first));
  auto second = b.TryAcquire();
  REQUIRE(second->has_value());
  CHECK((*second)->revision > first.revision);
}

TEST_CASE("resigning hands the key over at once") {
  ManualClock clock;
  FakeEtcd etcd(clock);
  Election a(etcd, Keys(), "a:1", 5), b(etcd, Keys(), "b:1", 5);
  Term t = **a.TryAcquire();
  REQUIRE(a.Resign(t).ok());
  CHECK(b.TryAcquire()->has_value());
}

TEST_CASE("the lease clock expires before etcd's lease can") {
  LeaseClock lease(5000000, 500000);
  CHECK_FALSE(lease.Valid(0));
  lease.Renewed(1000000);
  CHECK(lease.Valid(5000000));
  CHECK_FALSE(lease.Valid(5500000));  // etcd holds it until at least 6 s
}

TEST_CASE("cluster names that would escape their key prefix are refused") {
  CHECK_FALSE(HaKeys::For("").ok());
  CHECK_FALSE(HaKeys::For("a/b").ok());
  CHECK_FALSE(HaKeys::For(std::string(kMaxClusterNameBytes + 1, 'x')).ok());
  CHECK(HaKeys::For("mooncake_cluster").ok());
}

TEST_CASE("an unreachable etcd is an error, not a lost or won election") {
  ManualClock clock;
  FakeEtcd etcd(clock);
  etcd.SetDown(true);
  Election a(etcd, Keys(), "a:1", 5);
  auto t = a.TryAcquire();
  CHECK_FALSE(t.ok());
  CHECK(t.status().code() == ErrorCode::RPC_FAIL);
}

}  // namespace mc::ha

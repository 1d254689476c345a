#include "ha/fenced_log.h"

#include <doctest/doctest.h>

#include <random>

#include "common/test_seed.h"
#include "ha/fake_etcd.h"

namespace mc::ha {

namespace {
HaKeys Keys() { return *HaKeys::For("pool"); }

struct Cluster {
  ManualClock clock;
  FakeEtcd etcd{clock};
  Election a{etcd, Keys(), "a:1", 5};
  Election b{etcd, Keys(), "b:1", 5};
  FencedLog log{etcd, Keys()};
};
}  // namespace

TEST_CASE("the leader's entries read back in order after any position") {
  Cluster c;
  Term t = **c.a.TryAcquire();
  for (uint64_t i = 1; i <= 300; ++i) REQUIRE(c.log.Append(t, i, "e" + std::to_string(i)).ok());
  auto all = c.log.ReadAfter(0);
  REQUIRE(all.ok());
  CHECK(all->size() == static_cast<size_t>(kMaxEntriesPerRead));
  CHECK(all->front().data == "e1");
  auto tail = c.log.ReadAfter(290);
  REQUIRE(tail->size() == 10);
  CHECK(tail->back().index == 300);
  CHECK(*c.log.LastIndex() == 300);
}

TEST_CASE("a deposed leader's late append is refused by etcd") {
  Cluster c;
  Term old = **c.a.TryAcquire();
  REQUIRE(c.log.Append(old, 1, "x").ok());
  c.clock.AdvanceUs(6000000);  // a's lease runs out unrenewed
  Term now = **c.b.TryAcquire();
  REQUIRE(c.log.Append(now, 2, "from b").ok());
  Status late = c.log.Append(old, 3, "from a");
  CHECK(late.code() == ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS);
  CHECK(c.log.ReadAfter(0)->size() == 2);
}

TEST_CASE("an entry written twice keeps its first value") {
  Cluster c;
  Term t = **c.a.TryAcquire();
  REQUIRE(c.log.Append(t, 1, "first").ok());
  CHECK(c.log.Append(t, 1, "again").code() == ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS);
  CHECK(c.log.ReadAfter(0)->at(0).data == "first");
}

TEST_CASE("a snapshot trims the log behind it and bounds etcd's keys under steady load") {
  Cluster c;
  Term t = **c.a.TryAcquire();
  std::mt19937_64 rng(TestSeed("snapshot trimming"));
  uint64_t index = 0;
  size_t most_keys = 0;
  std::string image;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 50; ++i) REQUIRE(c.log.Append(t, ++index, std::to_string(rng())).ok());
    image = std::string(kSnapshotChunkBytes + rng() % 1000, static_cast<char>('a' + round));
    REQUIRE(c.log.WriteSnapshot(t, index - 5, image).ok());
    most_keys = std::max(most_keys, c.etcd.key_count());
  }
  // leader key + 5 entries + snapshot key + 2 chunks, whatever the rounds.
  CHECK(most_keys == 1 + 5 + 1 + 2);
  auto snap = c.log.ReadSnapshot();
  REQUIRE(snap.ok());
  REQUIRE(snap->has_value());
  CHECK((*snap)->index == index - 5);
  CHECK((*snap)->data == image);
  auto rest = c.log.ReadAfter((*snap)->index);
  REQUIRE(rest->size() == 5);
  CHECK(rest->front().index == index - 4);
}

TEST_CASE("a deposed leader cannot publish a snapshot") {
  Cluster c;
  Term old = **c.a.TryAcquire();
  REQUIRE(c.log.Append(old, 1, "x").ok());
  c.clock.AdvanceUs(6000000);
  Term now = **c.b.TryAcquire();
  (void)now;
  CHECK_FALSE(c.log.WriteSnapshot(old, 1, "image").ok());
  CHECK_FALSE(c.log.ReadSnapshot()->has_value());
  CHECK(c.log.ReadAfter(0)->size() == 1);
}

TEST_CASE("entries too large for one etcd request are refused before sending") {
  Cluster c;
  Term t = **c.a.TryAcquire();
  CHECK(c.log.Append(t, 1, std::string(kMaxLogEntryBytes + 1, 'x')).code() ==
        ErrorCode::INVALID_PARAMS);
}

}  // namespace mc::ha

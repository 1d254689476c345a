// TakeStaleRanges: what the master process must retire on the stores before
// it answers (master/stale_ranges.h).
#include <doctest/doctest.h>

#include "master/master_state.h"
#include "master/master_test_util.h"

using namespace mc;
using namespace mc::master;
using namespace mc::master::testing;

namespace {
constexpr uint64_t kMiB = 1ull << 20;

Options Tracking() {
  Options o;
  o.track_stale_ranges = true;
  return o;
}
uint64_t OffsetOf(const msg::GetReplicaListReply& r) {
  return r.replicas.at(0).buffers.at(0).offset;
}
}  // namespace

TEST_CASE("removed, replaced and evicted objects leave their ranges to retire, in-flight puts do not") {
  Harness h(Tracking());
  REQUIRE(h.Mount(1, "s1", 4 * kMiB).ok());
  REQUIRE(h.Put("a", 5000).ok());
  const uint64_t a = OffsetOf(*h.Get("a"));
  CHECK(h.state->TakeStaleRanges().empty());  // a put and a get retire nothing
  // A forced removal of a leased key: retired at once, though its space stays allocated.
  REQUIRE(h.state->Remove({"a", true}, h.now_us).ok());
  auto stale = h.state->TakeStaleRanges();
  REQUIRE(stale.size() == 1);
  CHECK(stale[0].segment == "s1");
  CHECK(stale[0].endpoint == "10.0.0.1:s1");
  CHECK(stale[0].offset == a);
  CHECK(stale[0].size_bytes == 5000);
  CHECK(h.state->TakeStaleRanges().empty());  // taken once
  // An upsert's end replaces the old version.
  REQUIRE(h.Put("b", 100).ok());
  const uint64_t b = OffsetOf(*h.Get("b"));
  REQUIRE(h.state->UpsertStart({Client(1), "b", 200, {1, false}}, h.now_us).ok());
  CHECK(h.state->TakeStaleRanges().empty());
  REQUIRE(h.End("b").ok());
  stale = h.state->TakeStaleRanges();
  REQUIRE(stale.size() == 1);
  CHECK(stale[0].offset == b);
  // A revoked put was never readable.
  REQUIRE(h.Start("c", 100).ok());
  REQUIRE(h.state->PutRevoke({Client(1), "c"}, h.now_us).ok());
  CHECK(h.state->TakeStaleRanges().empty());
  // Puts that evict: the victims' ranges.
  h.Advance(60 * 1000000ull);  // leases end
  for (int i = 0; i < 8; ++i) (void)h.Put("big" + std::to_string(i), kMiB);
  stale = h.state->TakeStaleRanges();
  CHECK(!stale.empty());
}

TEST_CASE("without tracking nothing is collected") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 4 * kMiB).ok());
  REQUIRE(h.Put("a", 5000).ok());
  REQUIRE(h.state->Remove({"a", true}, h.now_us).ok());
  CHECK(h.state->TakeStaleRanges().empty());
}

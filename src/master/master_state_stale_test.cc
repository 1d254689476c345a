// TakeStaleRanges: what the master process must retire on the stores before
// it answers (master/stale_ranges.h).
#include <doctest/doctest.h>

#include <map>

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

TEST_CASE("neighbouring ranges are retired as one, others apart") {
  Harness h(Tracking());
  REQUIRE(h.Mount(1, "s1", 4 * kMiB).ok());
  REQUIRE(h.Mount(1, "s2", 4 * kMiB).ok());
  // Placed one after another on the emptiest segment: 4096-byte objects and
  // 1000-byte ones with their alignment padding between them.
  for (int i = 0; i < 4; ++i) REQUIRE(h.Put("a" + std::to_string(i), 4096).ok());
  for (int i = 0; i < 4; ++i) REQUIRE(h.Put("b" + std::to_string(i), 1000).ok());
  std::map<std::string, uint64_t> offsets;
  std::map<std::string, std::string> segments;
  for (const char* p : {"a", "b"}) {
    for (int i = 0; i < 4; ++i) {
      const std::string k = p + std::to_string(i);
      const auto got = h.Get(k);
      offsets[k] = OffsetOf(*got);
      segments[k] = got->replicas.at(0).buffers.at(0).segment_name;
    }
  }
  h.Advance(60 * 1000000ull);  // leases end
  REQUIRE(h.state->TakeStaleRanges().empty());
  for (const auto& [k, off] : offsets) REQUIRE(h.state->Remove({k, false}, h.now_us).ok());
  const auto stale = h.state->TakeStaleRanges();
  // Every object's range is covered, and each range covers only removed
  // objects: their bytes add up to the ranges' without the padding.
  uint64_t covered = 0;
  for (const auto& s : stale) covered += s.size_bytes;
  for (const auto& [k, off] : offsets) {
    const uint64_t size = k[0] == 'a' ? 4096 : 1000;
    bool in = false;
    for (const auto& s : stale) {
      in |= s.segment == segments[k] && s.offset <= off && off + size <= s.offset + s.size_bytes;
    }
    CHECK_MESSAGE(in, k);
  }
  CHECK(stale.size() < offsets.size());  // neighbours merged
  CHECK(stale.size() >= 2);              // never across segments
  CHECK(covered <= 4 * 4096 + 4 * 1024);
}

TEST_CASE("the free space is listed a bounded batch at a time, every range once") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", 4 * kMiB).ok());
  REQUIRE(h.Mount(2, "s2", 4 * kMiB).ok());
  REQUIRE(h.Mount(3, "s3", 4 * kMiB).ok());
  REQUIRE(h.state->UnmountSegment({Client(2), "s2"}, h.now_us).ok());  // a hole in the table
  for (int i = 0; i < 24; ++i) REQUIRE(h.Put("k" + std::to_string(i), 100000 + 1000 * i).ok());
  for (int i = 0; i < 24; i += 3) REQUIRE(h.state->Remove({"k" + std::to_string(i), true}, h.now_us).ok());
  // Everything at once: the reference.
  MasterState::FreeCursor all;
  const std::vector<StaleRange> whole = h.state->NextFreeRanges(&all, SIZE_MAX);
  CHECK(h.state->NextFreeRanges(&all, SIZE_MAX).empty());
  uint64_t free_bytes = 0;
  for (const StaleRange& r : whole) {
    CHECK(r.segment != "s2");
    free_bytes += r.size_bytes;
  }
  CHECK(whole.size() > 4);  // the removals left gaps
  CHECK(free_bytes == 8 * kMiB - h.state->counters().allocated_bytes);
  for (size_t batch : {1, 2, 3, 7}) {
    MasterState::FreeCursor cursor;
    std::vector<StaleRange> got;
    for (;;) {
      const std::vector<StaleRange> part = h.state->NextFreeRanges(&cursor, batch);
      CHECK(part.size() <= batch);
      if (part.empty()) break;
      got.insert(got.end(), part.begin(), part.end());
    }
    REQUIRE(got.size() == whole.size());
    for (size_t i = 0; i < got.size(); ++i) {
      CHECK(got[i].segment == whole[i].segment);
      CHECK(got[i].endpoint == whole[i].endpoint);
      CHECK(got[i].offset == whole[i].offset);
      CHECK(got[i].size_bytes == whole[i].size_bytes);
    }
  }
}

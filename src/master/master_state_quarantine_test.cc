// A range whose RETIRE failed goes to no new object until a later retire
// succeeded, the old seals expired, or its segment went
// (master_state_quarantine.cc).
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "common/defaults.h"
#include "common/test_seed.h"
#include "master/master_state.h"
#include "master/master_test_util.h"

using namespace mc;
using namespace mc::master;
using namespace mc::master::testing;

namespace {
// One object fills the segment: where it may go again is unambiguous.
constexpr uint64_t kSeg = 64 * 1024;

struct Quarantined {
  Harness h;
  uint64_t until_us = 0;
  Quarantined() {
    REQUIRE(h.Mount(1, "s1", kSeg).ok());
    REQUIRE(h.Put("old", kSeg).ok());
    REQUIRE(h.state->Remove({"old", false}, h.now_us).ok());
    // The retirer reports the old object's retire failed.
    until_us = h.now_us + kSealedReadGrantTtlUs;
    REQUIRE(h.state->QuarantineRange("s1", 0, kSeg, until_us).ok());
  }
  Status PutNew() { return h.Put("new", kSeg); }
};
}  // namespace

TEST_CASE("a range whose retire failed is not reused before the seals' TTL, and is after it") {
  Quarantined q;
  CHECK(q.h.state->quarantine_stats().bytes == kSeg);
  CHECK(q.h.state->InQuarantine("s1", 100, 1));
  // No hang, no reuse: the usual refusal of a full pool.
  CHECK(q.PutNew().code() == ErrorCode::NO_AVAILABLE_HANDLE);
  q.h.Advance(q.until_us - 1 - q.h.now_us);
  (void)q.h.state->Tick(q.h.now_us);
  CHECK(q.PutNew().code() == ErrorCode::NO_AVAILABLE_HANDLE);
  q.h.Advance(1);
  CHECK(q.PutNew().ok());  // every seal of the old object has expired
  CHECK(q.h.state->quarantine_stats().bytes == 0);
  CHECK(q.h.state->quarantine_stats().expired == 1);
}

TEST_CASE("a range whose retire failed is reused at once after a later retire of it succeeded") {
  Quarantined q;
  REQUIRE(q.PutNew().code() == ErrorCode::NO_AVAILABLE_HANDLE);
  q.h.state->ReleaseQuarantine("s1", 0, kSeg);
  CHECK(q.PutNew().ok());
  CHECK(q.h.state->quarantine_stats().released == 1);
  CHECK(q.h.state->quarantine_stats().ranges == 0);
}

TEST_CASE("an unmount takes a quarantined range with its segment") {
  Quarantined q;
  REQUIRE(q.h.state->UnmountSegment({Client(1), "s1"}, q.h.now_us).ok());
  CHECK(q.h.state->quarantine_stats().ranges == 0);
  CHECK(q.h.state->quarantine_stats().bytes == 0);
  REQUIRE(q.h.Mount(1, "s1", kSeg).ok());  // the store retired its whole segment first
  CHECK(q.PutNew().ok());
  CHECK(q.h.state->QuarantineRange("gone", 0, 64, 1).code() == ErrorCode::SEGMENT_NOT_FOUND);
}

TEST_CASE("space placed before the failure was known is withheld when its put is revoked") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", kSeg).ok());
  REQUIRE(h.Put("old", kSeg / 2).ok());
  REQUIRE(h.state->Remove({"old", false}, h.now_us).ok());
  auto placed = h.Start("new", kSeg / 2);  // took the old range before the failure came
  REQUIRE(placed.ok());
  const uint64_t at = placed->replicas.at(0).buffers.at(0).offset;
  REQUIRE(h.state->QuarantineRange("s1", at, kSeg / 2, h.now_us + kSealedReadGrantTtlUs).ok());
  CHECK(h.state->InQuarantine("s1", at, kSeg / 2));
  REQUIRE(h.state->PutRevoke({Client(1), "new"}, h.now_us).ok());
  CHECK(h.state->quarantine_stats().bytes == kSeg / 2);
  // The other half is still free; the quarantined half goes to nobody (a
  // second put evicts the first to find room, or fails).
  for (const char* key : {"other", "more", "again"}) {
    if (!h.Put(key, kSeg / 2).ok()) continue;
    CHECK(h.Get(key)->replicas.at(0).buffers.at(0).offset != at);
  }
  CHECK(h.Start("whole", kSeg).status().code() == ErrorCode::NO_AVAILABLE_HANDLE);
}

TEST_CASE("overlapping quarantines: lifting one keeps what the other still covers") {
  Harness h;
  REQUIRE(h.Mount(1, "s1", kSeg).ok());
  REQUIRE(h.state->QuarantineRange("s1", 0, kSeg / 2, h.now_us + 10).ok());
  REQUIRE(h.state->QuarantineRange("s1", kSeg / 4, kSeg / 2, h.now_us + 20).ok());
  CHECK(h.state->quarantine_stats().bytes == 3 * kSeg / 4);
  h.Advance(10);
  (void)h.state->Tick(h.now_us);
  CHECK(h.state->quarantine_stats().bytes == kSeg / 2);
  CHECK(!h.state->InQuarantine("s1", 0, kSeg / 4));
  CHECK(h.state->InQuarantine("s1", kSeg / 4, 64));
  h.Advance(10);
  (void)h.state->Tick(h.now_us);
  CHECK(h.state->quarantine_stats().bytes == 0);
  CHECK(h.Put("all", kSeg).ok());
}

TEST_CASE("the allocator's quarantine matches a granule model under random allocs, frees, "
          "quarantines and lifts") {
  constexpr uint64_t kG = SegmentAllocator::kAlignmentBytes;
  constexpr uint64_t kGranules = kSeg / kG;
  enum class G { kFree, kOwned, kWithheld };
  std::mt19937_64 rng(TestSeed("allocator quarantine model"));
  SegmentAllocator a(kSeg);
  std::vector<G> model(kGranules, G::kFree);
  std::vector<bool> blocked(kGranules, false);
  std::vector<std::pair<uint64_t, uint64_t>> owned;  // (offset, size)
  auto range = [&] {
    const uint64_t g = rng() % kGranules;
    return std::make_pair(g * kG, (1 + rng() % std::min<uint64_t>(64, kGranules - g)) * kG);
  };
  for (int step = 0; step < 2000; ++step) {
    const int op = static_cast<int>(rng() % 4);
    if (op == 0) {
      const uint64_t size = 1 + rng() % 4096;
      auto off = a.Allocate(size);
      if (!off) continue;
      for (uint64_t g = *off / kG; g < (*off + SegmentAllocator::AlignUp(size)) / kG; ++g) {
        REQUIRE(model[g] == G::kFree);
        REQUIRE(!blocked[g]);
        model[g] = G::kOwned;
      }
      owned.emplace_back(*off, size);
    } else if (op == 1 && !owned.empty()) {
      const size_t i = rng() % owned.size();
      const auto [off, size] = owned[i];
      owned.erase(owned.begin() + static_cast<ptrdiff_t>(i));
      a.Free(off, size);
      for (uint64_t g = off / kG; g < (off + SegmentAllocator::AlignUp(size)) / kG; ++g) {
        model[g] = blocked[g] ? G::kWithheld : G::kFree;
      }
    } else if (op == 2) {
      const auto [off, len] = range();
      a.Quarantine(off, len);
      for (uint64_t g = off / kG; g < (off + len) / kG; ++g) {
        blocked[g] = true;
        if (model[g] == G::kFree) model[g] = G::kWithheld;
      }
    } else if (op == 3) {
      const auto [off, len] = range();
      a.Unquarantine(off, len);
      for (uint64_t g = off / kG; g < (off + len) / kG; ++g) {
        blocked[g] = false;
        if (model[g] == G::kWithheld) model[g] = G::kFree;
      }
    }
    REQUIRE(a.CheckInvariants().ok());
    uint64_t free = 0, withheld = 0;
    for (uint64_t g = 0; g < kGranules; ++g) {
      free += model[g] == G::kFree;
      withheld += model[g] == G::kWithheld;
      REQUIRE(a.IsFree(g * kG, kG) == (model[g] == G::kFree));
      REQUIRE(a.Quarantined(g * kG, kG) == blocked[g]);
    }
    REQUIRE(a.free_bytes() == free * kG);
    REQUIRE(a.withheld_bytes() == withheld * kG);
  }
}

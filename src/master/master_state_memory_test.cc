// The master's memory per object: what each structure costs for objects of
// 40-byte keys (issue 33's sizing case), printed as a breakdown and held to
// a budget so a wider record or a copied field shows up here.
#include <doctest/doctest.h>

#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>

#include "eviction/adaptive.h"
#include "eviction/table.h"
#include "master/master_state.h"
#include "master/master_test_util.h"

namespace mc::master {
namespace {

// Keys as `mooncake bench --key-names hashed --key-bytes 40` makes them:
// 40 hex digits, in no order.
std::string HashedKey(uint64_t i) {
  char key[48];
  std::snprintf(key, sizeof key, "%016" PRIx64 "%016" PRIx64 "%08" PRIx32,
                eviction::MixBits(i), eviction::MixBits(~i), static_cast<uint32_t>(i));
  return std::string(key, 40);
}

}  // namespace

TEST_CASE("a master of 40-byte keys holds an object in about 116 bytes of its structures") {
  constexpr uint64_t kObjects = 1 << 17;
  // The duel's shadows are left out: they cost a sample of the keys (about
  // 2 bytes an object at 10 million, mooncake-master(1)), not every object.
  MasterState state(Options{},
                    std::make_unique<AdaptivePolicy>(0, /*duel=*/false, IdSpace::kSlotted));
  // Twice the space the objects need: nothing is evicted at the tick.
  REQUIRE(state.MountSegment({testing::Client(1), testing::Segment("s", kObjects << 11)}, 1).ok());
  for (uint64_t i = 0; i < kObjects; ++i) {
    const std::string key = HashedKey(i);
    REQUIRE(state.PutStart({testing::Client(1), key, 1024, {1, false}}, 2).ok());
    REQUIRE(state.PutEnd({testing::Client(1), key}, 2).ok());
  }
  (void)state.Tick(3);  // drops the ended puts' timers, as the master's ticks do
  const MasterState::MemoryUse m = state.memory_use();
  auto per = [&](size_t bytes) { return static_cast<double>(bytes) / kObjects; };
  MESSAGE("bytes per object of 40-byte keys at " << kObjects << " objects: index "
          << per(m.index) << " (nodes " << per(m.index_nodes) << ": record "
          << sizeof(ObjectRecord) << ", key 40, links the rest), slot table " << per(m.slots)
          << ", eviction " << per(m.policy) << ", in flight " << per(m.in_flight)
          << "; total " << per(m.total()));
  // A node is the record, the key and 8 bytes a skip-list level (4/3 levels
  // on average); a slot is a 4-byte node handle and a generation; the
  // policy's node is 4 links of 4 bytes and a byte for its list. 2 bytes of
  // slack for free space in the node chunks.
  const double budget = 40 + sizeof(ObjectRecord) + 8.0 * 4 / 3 + 8 + 17 + 2;
  CHECK(per(m.index_nodes) <= 40 + sizeof(ObjectRecord) + 8.0 * 4 / 3 + 1);
  CHECK(per(m.slots) <= 8);
  CHECK(per(m.total()) <= budget);
  CHECK(state.counters().key_count == kObjects);
  CHECK(state.CheckInvariants().ok());
}

}  // namespace mc::master

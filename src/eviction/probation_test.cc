// The probation policy through the seam, and Belady's MIN as the yardstick
// it is judged against.
#include <doctest/doctest.h>

#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/test_seed.h"
#include "eviction/policy.h"
#include "eviction/testing_policy.h"
#include "eviction/probation.h"
#include "eviction/trace.h"
#include "eviction/trace_synth.h"

using namespace mc::master;
using namespace mc::bench;

namespace {

const auto kAll = EveryObject;
const auto Drain = DrainVictims;

std::string Line(const std::vector<uint64_t>& ids) {
  std::string s = "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]}\n";
}

// A cache of `capacity` objects driven through the seam, one key at a time,
// as the master would: a hit is an access; a miss is reported, then the key
// is put, evicting first when full.
class SeamCache {
 public:
  SeamCache(EvictionPolicy& p, size_t capacity) : p_(p), capacity_(capacity) {}
  bool Reference(uint64_t key) {
    auto it = ids_.find(key);
    if (it != ids_.end()) {
      p_.OnAccess(it->second);
      ++hits_;
      return true;
    }
    p_.OnMiss(key);
    if (ids_.size() == capacity_) {
      auto v = p_.NextVictim(kAll);
      REQUIRE(v.has_value());
      REQUIRE(keys_.count(*v) == 1);
      ids_.erase(keys_[*v]);
      keys_.erase(*v);
    }
    ids_[key] = next_;
    keys_[next_] = key;
    p_.OnInsert(next_++, key, 1);
    return false;
  }
  uint64_t hits() const { return hits_; }

 private:
  EvictionPolicy& p_;
  size_t capacity_;
  std::unordered_map<uint64_t, ObjectId> ids_;
  std::unordered_map<ObjectId, uint64_t> keys_;
  ObjectId next_ = 1;
  uint64_t hits_ = 0;
};

}  // namespace

TEST_CASE("the duel follows probation against scans and plain recency against long gaps") {
  constexpr size_t kCapacity = 1000;
  {
    // A hot set read between long one-off scans: LRU lets each scan flush
    // it, probation keeps it.
    ProbationPolicy p(0);
    SeamCache c(p, kCapacity);
    uint64_t fresh = 1 << 20;
    for (int round = 0; round < 50; ++round) {
      for (uint64_t k = 0; k < 300; ++k) c.Reference(k);
      for (int i = 0; i < 1500; ++i) c.Reference(fresh++);
    }
    CHECK_FALSE(p.evicting_by_recency());
    CHECK(p.stats().victims_by_recency < p.stats().victims);
  }
  {
    // Every key is read once more a quarter of a cache later (half a cache
    // of other keys between): LRU hits them all, a probation of a tenth of
    // the cache none.
    ProbationPolicy p(0);
    SeamCache c(p, kCapacity);
    for (uint64_t k = 0; k < 50 * kCapacity; ++k) {
      c.Reference(k);
      if (k >= kCapacity / 4) c.Reference(k - kCapacity / 4);
    }
    CHECK(p.evicting_by_recency());
    CHECK(c.hits() > 45 * kCapacity);
  }
}

TEST_CASE("the factory knows probation, and its list starts with the master's default, adaptive") {
  CHECK(MakeEvictionPolicy("probation", 0)->name() == "probation");
  CHECK(kEvictionPolicyNames[0] == "adaptive");
  for (std::string_view name : kEvictionPolicyNames) {
    CHECK(MakeEvictionPolicy(name, 0, IdSpace::kSlotted)->name() == name);
  }
}

TEST_CASE("one-hit objects go before objects that were read again, however recent") {
  ProbationPolicy p(0, IdSpace::kAny, /*duel=*/false);
  for (ObjectId id = 1; id <= 20; ++id) p.OnInsert(id, 100 + id, 1);
  // The oldest two are read again: they leave probation.
  p.OnAccess(1);
  p.OnAccess(2);
  CHECK_FALSE(p.OnProbation(1));
  CHECK(p.OnProbation(3));
  std::vector<ObjectId> order = Drain(p);
  REQUIRE(order.size() == 20);
  // Probation (18 one-hit objects, oldest first) drains before main.
  for (size_t i = 0; i < 18; ++i) CHECK(order[i] == ObjectId(3 + i));
  CHECK(order[18] == ObjectId{1});
  CHECK(order[19] == ObjectId{2});
}

TEST_CASE("a long one-off chain cannot push out what is read repeatedly") {
  ProbationPolicy p(0, IdSpace::kAny, /*duel=*/false);
  const ObjectId kHot = 10;
  for (ObjectId id = 1; id <= kHot; ++id) {
    p.OnInsert(id, id, 1);
    p.OnAccess(id);  // read again: main
  }
  // A scan of 1000 fresh blocks through a pool of kHot + 5 objects.
  ObjectId next = 1000;
  for (int i = 0; i < 5; ++i) p.OnInsert(next, next, 1), ++next;
  for (int i = 0; i < 1000; ++i) {
    auto v = p.NextVictim(kAll);
    REQUIRE(v.has_value());
    CHECK(*v >= 1000);  // never one of the hot objects
    p.OnInsert(next, next, 1), ++next;
  }
  for (ObjectId id = 1; id <= kHot; ++id) CHECK_FALSE(p.OnProbation(id));
  CHECK(p.tracked() == kHot + 5);
}

TEST_CASE("a key put back after probation let it go is admitted to main") {
  ProbationPolicy p(0, IdSpace::kAny, /*duel=*/false);
  for (ObjectId id = 1; id <= 10; ++id) p.OnInsert(id, /*key_hash=*/id, 1);
  CHECK_FALSE(p.IsGhost(1));
  CHECK(p.NextVictim(kAll) == ObjectId{1});
  CHECK(p.IsGhost(1));
  p.OnInsert(11, /*key_hash=*/1, 1);  // key 1 again, as a new object
  CHECK_FALSE(p.OnProbation(11));
  p.OnInsert(12, /*key_hash=*/555, 1);  // never seen: probation
  CHECK(p.OnProbation(12));
}

TEST_CASE("a key put back soon after main let it go returns to main, not probation") {
  // A block read again and again that falls out of main during a long gap
  // has shown its reuse once already: it should not serve probation anew.
  ProbationPolicy p(0, IdSpace::kAny, /*duel=*/false);
  p.OnInsert(1, /*key_hash=*/100, 1);
  p.OnAccess(1);  // main
  CHECK(p.NextVictim(kAll) == ObjectId{1});  // main's only object goes
  CHECK(p.IsGhost(100));
  p.OnInsert(2, /*key_hash=*/100, 1);
  CHECK_FALSE(p.OnProbation(2));
}

TEST_CASE("a prefix chain touched tail first loses its tail before its head") {
  // The master applies a batch last key first, so a chain's head is touched
  // last; both queues then give up the tail first.
  ProbationPolicy p(0, IdSpace::kAny, /*duel=*/false);
  const std::vector<ObjectId> chain = {1, 2, 3, 4, 5};  // head 1
  for (size_t i = chain.size(); i-- > 0;) p.OnInsert(chain[i], chain[i], 1);
  CHECK(Drain(p) == std::vector<ObjectId>{5, 4, 3, 2, 1});
  for (size_t i = chain.size(); i-- > 0;) p.OnInsert(chain[i] + 10, chain[i] + 10, 1);
  for (size_t i = chain.size(); i-- > 0;) p.OnAccess(chain[i] + 10);  // a reuse: main
  CHECK(Drain(p) == std::vector<ObjectId>{15, 14, 13, 12, 11});
}

TEST_CASE("a victim costs a bounded walk while evictable objects are near the ends") {
  ProbationPolicy p(0, IdSpace::kAny, /*duel=*/false);
  for (ObjectId id = 1; id <= 1000; ++id) p.OnInsert(id, id, 1);
  for (ObjectId id = 1; id <= 1000; id += 2) p.OnAccess(id);  // odd ids: main
  // The least recent few of each queue (fewer than the bound) are leased.
  auto not_leased = [](ObjectId id) { return id > ProbationPolicy::kMaxSkipsPerQueue; };
  uint64_t steps = p.stats().victim_steps;
  for (int i = 0; i < 100; ++i) {
    auto v = p.NextVictim(not_leased);
    REQUIRE(v.has_value());
    CHECK(not_leased(*v));
    const uint64_t cost = p.stats().victim_steps - steps;
    CHECK(cost <= 2 * ProbationPolicy::kMaxSkipsPerQueue);
    steps = p.stats().victim_steps;
  }
  // Past the bound only when the ends hold nothing evictable: still found.
  ProbationPolicy q(0, IdSpace::kAny, /*duel=*/false);
  for (ObjectId id = 1; id <= 200; ++id) q.OnInsert(id, id, 1);
  CHECK(q.NextVictim([](ObjectId id) { return id == 150; }) == ObjectId{150});
  CHECK(q.NextVictim([](ObjectId) { return false; }) == std::nullopt);
  CHECK(q.tracked() == 199);
}

TEST_CASE("ghosts are forgotten after two generations and cost a few bytes an object") {
  constexpr size_t kObjects = 100000;
  ProbationPolicy p(0, IdSpace::kSlotted, /*duel=*/false);
  for (ObjectId slot = 0; slot < kObjects; ++slot) p.OnInsert(ObjectId{1} << 32 | slot, slot, 4096);
  // Churn as the master does: each new object takes the slot its victim
  // freed, one generation on. Every victim is a one-hit object: a ghost.
  uint64_t key = kObjects;
  auto churn = [&] {
    auto v = p.NextVictim(kAll);
    REQUIRE(v.has_value());
    p.OnInsert(((*v >> 32) + 1) << 32 | (*v & 0xffffffffu), key++, 4096);
  };
  for (size_t i = 0; i < kObjects; ++i) churn();
  const size_t generation = p.ghost_generation();
  CHECK(generation >= kObjects / 2 * ProbationPolicy::kGhostsPerObject / 2);
  CHECK(p.IsGhost(kObjects - 1));  // a recent victim is remembered
  const size_t per_object = p.memory_bytes() / kObjects;
  MESSAGE("probation bytes per object with ghosts: " << per_object);
  // 40-byte nodes at their slots and a bit a slot, grown by doubling (up
  // to ~60 amortized), and about 4 bytes of ghost filter.
  CHECK(per_object <= 80);
  // Two more generations of victims push the first ones out.
  for (size_t i = 0; i < 2 * generation + 1; ++i) churn();
  size_t remembered = 0;
  for (uint64_t k = 0; k < 1000; ++k) remembered += p.IsGhost(k);
  CHECK(remembered <= 50);  // false positives only (about 1%)
}

TEST_CASE("randomized operations keep the probation policy consistent with a model") {
  std::mt19937_64 rng(mc::TestSeed("probation model"));
  ProbationPolicy p(0, IdSpace::kAny);
  std::set<ObjectId> live;
  ObjectId next = 1;
  for (int step = 0; step < 20000; ++step) {
    const int op = int(rng() % 10);
    if (op < 4 || live.empty()) {
      const uint64_t key = rng() % 300;  // keys repeat: ghosts get hit
      p.OnInsert(next, key, 1 + rng() % 4);
      live.insert(next++);
    } else if (op < 7) {
      auto it = live.lower_bound(rng() % next);
      if (it != live.end()) p.OnAccess(*it);
    } else if (op < 8) {
      auto it = live.lower_bound(rng() % next);
      if (it != live.end()) p.OnRemove(*it), live.erase(it);
    } else {
      const uint64_t mod = 2 + rng() % 5;
      auto evictable = [&](ObjectId id) { return id % mod != 0; };
      auto v = p.NextVictim(evictable);
      bool any = false;
      for (ObjectId id : live) any = any || evictable(id);
      REQUIRE(v.has_value() == any);
      if (v) {
        REQUIRE(live.count(*v) == 1);
        CHECK(evictable(*v));
        live.erase(*v);
      }
    }
    REQUIRE(p.tracked() == live.size());
  }
}

TEST_CASE("Belady's MIN on a hand-made trace keeps the block needed soonest") {
  // Capacity 2. r1 stores 1 2. r2 [3]: evicts 2 (never again) rather than 1.
  // r3 [1] hits. LRU would have evicted 1. Hits: 0 + 0 + 1 of 4 blocks.
  auto t = ParseTrace(Line({1, 2}) + Line({3}) + Line({1}), "hand");
  REQUIRE(t.ok());
  CHECK(BeladyHitRatio(*t, 2) == doctest::Approx(1.0 / 4.0));
  CHECK(ExactLruHitRatio(*t, 2) == doctest::Approx(0.0));
  CHECK(GapClosed(0.2, 0.6, 0.3) == doctest::Approx(0.25));
  CHECK(GapClosed(0.2, 0.2, 0.3) == 0.0);
}

TEST_CASE("Belady bounds exact LRU and every policy on seeded synthetic traces") {
  const uint64_t seed = mc::TestSeed("belady bound");
  SyntheticTraceOptions o = SyntheticVariant(uint32_t(seed % kSyntheticVariants));
  o.requests = 800;
  Trace t = GenerateSyntheticTrace(o, seed);
  for (size_t capacity : {64, 512, 4096}) {
    const double belady = BeladyHitRatio(t, capacity);
    CAPTURE(capacity);
    CHECK(belady >= ExactLruHitRatio(t, capacity));
    for (std::string_view name : kEvictionPolicyNames) {
      auto r = PolicyHitRatio(t, name, capacity);
      REQUIRE(r.ok());
      CHECK(belady >= *r);
    }
  }
}

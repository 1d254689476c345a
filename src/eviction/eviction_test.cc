// Eviction policy semantics through the seam, and a randomized check of the
// adaptive policy against a model of what is tracked.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <set>
#include <unordered_map>
#include <vector>

#include "common/test_seed.h"
#include "eviction/adaptive.h"
#include "eviction/lru.h"
#include "eviction/policy.h"
#include "eviction/testing_policy.h"

using namespace mc::master;

namespace {

const auto kAll = EveryObject;
const auto Drain = DrainVictims;

// The caller's side of ObjectFacts, as the master answers it: what the live
// object of each slot is (kSlotted ids).
class SlotFacts final : public ObjectFacts {
 public:
  void Set(ObjectId id, uint64_t key_hash, uint64_t size_bytes) {
    const auto slot = static_cast<uint32_t>(id);
    if (slot >= facts_.size()) facts_.resize(size_t{slot} + 1);
    facts_[slot] = {id, key_hash, size_bytes};
  }
  ObjectId IdAt(uint32_t slot) const override { return facts_.at(slot).id; }
  uint64_t KeyHashAt(uint32_t slot) const override { return facts_.at(slot).key_hash; }
  uint64_t SizeAt(uint32_t slot) const override { return facts_.at(slot).size_bytes; }

 private:
  struct Fact {
    ObjectId id = 0;
    uint64_t key_hash = 0;
    uint64_t size_bytes = 0;
  };
  std::vector<Fact> facts_;
};

}  // namespace

TEST_CASE("the factory knows lru, adaptive and probation and nothing else") {
  CHECK(MakeEvictionPolicy("lru", 0)->name() == "lru");
  CHECK(MakeEvictionPolicy("probation", 0)->name() == "probation");
  CHECK(MakeEvictionPolicy("adaptive", 0)->name() == "adaptive");
  CHECK(MakeEvictionPolicy("lfu", 0) == nullptr);
}

TEST_CASE("both policies evict in recency order when nothing was reused") {
  for (const char* name : {"lru", "adaptive"}) {
    auto p = MakeEvictionPolicy(name, 0);
    for (ObjectId id = 1; id <= 5; ++id) p->OnInsert(id, 100 + id, 10);
    CHECK(p->tracked() == 5);
    // CLOCK gives every new object one pass of grace, so it too starts at 1.
    CHECK(Drain(*p) == std::vector<ObjectId>{1, 2, 3, 4, 5});
    CHECK(p->tracked() == 0);
  }
}

TEST_CASE("an accessed object outlives objects that were not accessed") {
  for (const char* name : {"lru", "adaptive"}) {
    auto p = MakeEvictionPolicy(name, 0);
    for (ObjectId id = 1; id <= 4; ++id) p->OnInsert(id, id, 1);
    // The first victim makes CLOCK's hand pass every new object once.
    CHECK(p->NextVictim(kAll) == ObjectId{1});
    p->OnAccess(2);
    CHECK(Drain(*p) == std::vector<ObjectId>{3, 4, 2});
  }
}

TEST_CASE("objects the predicate rejects are skipped and stay tracked in place") {
  for (const char* name : {"lru", "adaptive"}) {
    auto p = MakeEvictionPolicy(name, 0);
    for (ObjectId id = 1; id <= 4; ++id) p->OnInsert(id, id, 1);
    auto not_one_or_two = [](ObjectId id) { return id != 1 && id != 2; };
    CHECK(p->NextVictim(not_one_or_two) == ObjectId{3});
    CHECK(p->NextVictim(not_one_or_two) == ObjectId{4});
    CHECK(p->NextVictim(not_one_or_two) == std::nullopt);
    CHECK(p->tracked() == 2);
    CHECK(Drain(*p) == std::vector<ObjectId>{1, 2});
  }
}

TEST_CASE("OnRemove stops tracking without leaving a ghost and ignores unknown ids") {
  AdaptivePolicy p(0);
  p.OnInsert(1, 11, 1);
  p.OnInsert(2, 12, 1);
  p.OnRemove(1);
  p.OnRemove(99);
  p.OnAccess(98);
  CHECK(p.tracked() == 1);
  CHECK(p.ghosts() == 0);
  CHECK(Drain(p) == std::vector<ObjectId>{2});
  CHECK(p.ghosts() == 1);
}

TEST_CASE("a re-put key found in recency ghosts grows the recency target") {
  AdaptivePolicy p(0);
  for (ObjectId id = 1; id <= 8; ++id) p.OnInsert(id, id, 1);
  CHECK(p.NextVictim(kAll) == ObjectId{1});
  CHECK(p.target_recent_bytes() == 0);
  p.OnInsert(100, /*key_hash=*/1, 1);  // key 1 comes back: B1 hit
  CHECK(p.target_recent_bytes() > 0);
  CHECK(p.ghosts() == 0);
}

TEST_CASE("a read missing a ghosted key adapts the target once, and a re-put does not again") {
  AdaptivePolicy p(0);
  for (ObjectId id = 1; id <= 8; ++id) p.OnInsert(id, id, 1);
  CHECK(p.NextVictim(kAll) == ObjectId{1});
  REQUIRE(p.ghosts() == 1);
  p.OnMiss(/*key_hash=*/1);  // a get of evicted key 1: a B1 hit without a re-put
  const uint64_t after_miss = p.target_recent_bytes();
  CHECK(after_miss > 0);
  p.OnMiss(1);  // asking again says nothing new
  CHECK(p.target_recent_bytes() == after_miss);
  p.OnMiss(/*key_hash=*/999);  // never seen: nothing to learn
  CHECK(p.target_recent_bytes() == after_miss);
  p.OnInsert(100, 1, 1);  // the re-put consumes the ghost without a second step
  CHECK(p.target_recent_bytes() == after_miss);
  CHECK(p.ghosts() == 0);
}

TEST_CASE("a round of victims in a row keeps the cache size it began with, and every ghost") {
  // Background eviction above the watermark frees many objects in one round;
  // the cache is as large as when the round began, not as what is left.
  AdaptivePolicy p(0);
  for (ObjectId id = 1; id <= 100; ++id) p.OnInsert(id, id, 1);
  for (int i = 0; i < 10; ++i) REQUIRE(p.NextVictim(kAll).has_value());
  // Measured at each victim, c would shrink to 91 and ARC's bound on T1 + B1
  // would drop all but the last ghost.
  CHECK(p.ghosts() == 10);
}

TEST_CASE("ghost history stays within its named limit") {
  AdaptivePolicy p(64);
  CHECK(p.ghost_limit_objects() == 64);
  ObjectId next = 1;
  for (int i = 0; i < 1000; ++i) p.OnInsert(next, next, 1), ++next;
  for (int round = 0; round < 5000; ++round) {
    p.NextVictim(kAll);
    p.OnInsert(next, next, 1);
    ++next;
    CHECK(p.ghosts() <= 64);
  }
  AdaptivePolicy unhinted(0);
  CHECK(unhinted.ghost_limit_objects() == AdaptivePolicy::kMinGhostLimitObjects);
}

TEST_CASE("policy state per object stays within the memory budget") {
  constexpr size_t kObjects = 100000;
  AdaptivePolicy adaptive(kObjects);
  ClockPolicy clock(kObjects);
  for (ObjectId id = 1; id <= kObjects; ++id) {
    adaptive.OnInsert(id, id * 7919, 4096);
    clock.OnInsert(id, id * 7919, 4096);
  }
  size_t adaptive_live = adaptive.memory_bytes() / kObjects;
  // Churn so ghosts fill up to their limit (one per live object at most).
  for (ObjectId id = kObjects + 1; id <= 3 * kObjects; ++id) {
    adaptive.NextVictim(kAll);
    adaptive.OnInsert(id, id * 7919, 4096);
  }
  size_t adaptive_total = adaptive.memory_bytes() / kObjects;
  size_t clock_bytes = clock.memory_bytes() / kObjects;
  MESSAGE("bytes per object: adaptive live " << adaptive_live << ", with ghosts "
                                             << adaptive_total << "; lru " << clock_bytes);
  // 48-byte nodes plus a 12-byte-bucket index, both grown by doubling: ~70
  // amortized, up to ~110 just after a doubling.
  CHECK(adaptive_live <= 128);
  CHECK(adaptive_total <= 192);
  CHECK(clock_bytes <= 48);
}

TEST_CASE("with the master's slotted ids a live node sits at its slot, with no index") {
  // 2^16 objects: the node vector has grown by doubling to exactly that.
  constexpr size_t kObjects = 1 << 16;
  AdaptivePolicy hashed(kObjects, /*duel=*/false),
      slotted(kObjects, /*duel=*/false, IdSpace::kSlotted),
      with_facts(kObjects, /*duel=*/false, IdSpace::kSlotted);
  SlotFacts facts;
  with_facts.UseFacts(&facts);
  for (ObjectId slot = 0; slot < kObjects; ++slot) {
    const ObjectId id = ObjectId{1} << 32 | slot;
    facts.Set(id, slot * 7919, 4096);
    hashed.OnInsert(id, slot * 7919, 4096);
    slotted.OnInsert(id, slot * 7919, 4096);
    with_facts.OnInsert(id, slot * 7919, 4096);
  }
  const size_t h = hashed.memory_bytes(), s = slotted.memory_bytes(),
               f = with_facts.memory_bytes();
  MESSAGE("adaptive bytes per object: hashed ids " << double(h) / kObjects << ", slotted ids "
                                                   << double(s) / kObjects << ", with the "
                                                   << "caller's facts " << double(f) / kObjects);
  // The 16-byte node of links and a byte for its list a slot, plus the
  // 24-byte copy of the object's id, key hash and size unless the caller
  // answers them; the hashed index is 16-32 bytes an entry on top.
  CHECK(f <= kObjects * (16 + 1) + 4096);
  CHECK(s <= kObjects * (16 + 1 + 24) + 4096);
  CHECK(s + kObjects * 8 <= h);
  CHECK(with_facts.Tracks(ObjectId{1} << 32 | 7));
  CHECK(!with_facts.Tracks(ObjectId{2} << 32 | 7));
  CHECK(slotted.Tracks(ObjectId{1} << 32 | 7));
  CHECK(!slotted.Tracks(ObjectId{2} << 32 | 7));  // another generation of the slot
  CHECK(!slotted.Tracks(ObjectId{1} << 32 | kObjects));
  slotted.OnRemove(ObjectId{1} << 32 | 7);
  CHECK(!slotted.Tracks(ObjectId{1} << 32 | 7));
  slotted.OnInsert(ObjectId{2} << 32 | 7, 1, 4096);  // the slot's next object
  CHECK(slotted.Tracks(ObjectId{2} << 32 | 7));
  CHECK(!slotted.Tracks(ObjectId{1} << 32 | 7));
}

TEST_CASE("slotted ids, with the caller's facts or without, and hashed ids give the same victims") {
  // Where a node lives must not change what the policy decides: the master
  // (slotted ids) behaves as trace replays (any ids) measure.
  uint64_t seed = mc::TestSeed("eviction slotted vs hashed");
  std::mt19937_64 rng(seed);
  for (const char* name : {"lru", "adaptive", "probation"}) {
    CAPTURE(name);
    auto any = MakeEvictionPolicy(name, 0, IdSpace::kAny);
    auto slotted = MakeEvictionPolicy(name, 0, IdSpace::kSlotted);
    auto with_facts = MakeEvictionPolicy(name, 0, IdSpace::kSlotted);
    SlotFacts facts;
    with_facts->UseFacts(&facts);
    std::vector<uint32_t> generations, free_slots;
    std::vector<ObjectId> live;
    for (int step = 0; step < 20000; ++step) {
      const uint64_t op = rng() % 10;
      if (op < 4 || live.empty()) {
        uint32_t slot;
        if (!free_slots.empty()) {
          slot = free_slots.back();
          free_slots.pop_back();
        } else {
          slot = static_cast<uint32_t>(generations.size());
          generations.push_back(0);
        }
        const ObjectId id = ObjectId{++generations[slot]} << 32 | slot;
        const uint64_t key_hash = rng() % 400, size = 1 + rng() % 1000;
        any->OnInsert(id, key_hash, size);
        slotted->OnInsert(id, key_hash, size);
        facts.Set(id, key_hash, size);
        with_facts->OnInsert(id, key_hash, size);
        live.push_back(id);
      } else if (op < 7) {
        const ObjectId id = live[rng() % live.size()];
        any->OnAccess(id);
        slotted->OnAccess(id);
        with_facts->OnAccess(id);
      } else if (op < 8) {
        const size_t i = rng() % live.size();
        any->OnRemove(live[i]);
        slotted->OnRemove(live[i]);
        with_facts->OnRemove(live[i]);
        free_slots.push_back(static_cast<uint32_t>(live[i]));
        live.erase(live.begin() + long(i));
      } else {
        const uint64_t missed = rng() % 400;
        any->OnMiss(missed);
        slotted->OnMiss(missed);
        with_facts->OnMiss(missed);
        const uint64_t odd = rng() % 2;  // reject ids of one parity
        auto evictable = [odd](ObjectId id) { return (id & 1) != odd; };
        const auto a = any->NextVictim(evictable), b = slotted->NextVictim(evictable);
        REQUIRE(a == b);
        REQUIRE(with_facts->NextVictim(evictable) == a);
        if (a) {
          free_slots.push_back(static_cast<uint32_t>(*a));
          live.erase(std::find(live.begin(), live.end(), *a));
        }
      }
      REQUIRE(any->tracked() == slotted->tracked());
      REQUIRE(with_facts->tracked() == slotted->tracked());
    }
  }
}

TEST_CASE("the duel replays every key of a small cache and samples a large one") {
  PolicyDuel duel;
  CHECK(duel.sample_shift() == 0);
  duel.SetTrackedHighWater(2 * PolicyDuel::kShadowObjects - 1);
  CHECK(duel.sample_shift() == 0);
  duel.SetTrackedHighWater(2 * PolicyDuel::kShadowObjects);
  CHECK(duel.sample_shift() == 1);
  duel.SetTrackedHighWater(size_t{1} << 30);
  CHECK(duel.sample_shift() == PolicyDuel::kMaxSampleShift);
  duel.SetTrackedHighWater(10);  // a cache that shrank: the sample stays sparse
  CHECK(duel.sample_shift() == PolicyDuel::kMaxSampleShift);
  // A cache whose size is known when the sample gets sparser: the shadows
  // shrink with it at once.
  PolicyDuel known;
  known.SetCapacity(100000);
  CHECK(known.shadow_capacity() == 100000);
  known.SetTrackedHighWater(100000);
  CHECK(known.sample_shift() == 2);
  CHECK(known.shadow_capacity() == 25000);

  // Through the policy: a cache of 1000 objects feeds the duel every key, so
  // its shadows fill with all of them; at 300k objects only 1 key in 16 is
  // replayed and the shadows hold about a sixteenth of the cache's keys.
  for (size_t objects : {size_t{1000}, size_t{300000}}) {
    CAPTURE(objects);
    AdaptivePolicy p(0);
    for (ObjectId id = 1; id <= objects; ++id) p.OnInsert(id, id * 0x9e3779b97f4a7c15ULL, 4096);
    size_t before = p.memory_bytes();
    AdaptivePolicy plain(0, /*duel=*/false);
    for (ObjectId id = 1; id <= objects; ++id) plain.OnInsert(id, id * 0x9e3779b97f4a7c15ULL, 4096);
    double shadow_per_object = double(before - plain.memory_bytes()) / double(objects);
    MESSAGE("duel bytes per real object: " << shadow_per_object);
    if (objects == 1000) CHECK(shadow_per_object > 60);   // every key, in two shadows
    else CHECK(shadow_per_object < 15);                   // 1 key in 16
  }
}

TEST_CASE("the adaptive policy counts its victims by mode, and its switches") {
  // A cache of 100 objects driven as the master drives it.
  AdaptivePolicy p(0);
  std::unordered_map<uint64_t, ObjectId> held;  // key -> id
  std::unordered_map<ObjectId, uint64_t> keys;  // id -> key
  ObjectId next = 1;
  auto touch = [&](uint64_t key) {
    if (auto it = held.find(key); it != held.end()) return p.OnAccess(it->second);
    p.OnMiss(key);
    if (held.size() == 100) {
      std::optional<ObjectId> v = p.NextVictim(kAll);
      REQUIRE(v.has_value());
      held.erase(keys.at(*v));
      keys.erase(*v);
    }
    held[key] = next;
    keys[next] = key;
    p.OnInsert(next++, key, 1);
  };
  // Before the duel has seen the two shadows differ it is a tie, and a tie
  // goes to recency.
  for (uint64_t key = 1; key <= 110; ++key) touch(key);
  CHECK(p.stats().victims == 10);
  CHECK(p.stats().victims_by_recency == 10);
  CHECK(p.stats().mode_switches == 0);
  // 70 hot keys, each read twice in a row (so ARC holds them in T2) and
  // again only after 70 one-off keys: too far apart for LRU (140 distinct
  // keys in a cache of 100), while ARC evicts the one-off keys instead.
  for (uint64_t round = 0; round < 40; ++round) {
    for (uint64_t h = 0; h < 70; ++h) {
      touch(1000 + h);
      touch(1000 + h);
      touch(100000 + round * 70 + h);
    }
  }
  EvictionStats s = p.stats();
  MESSAGE("victims " << s.victims << ", by recency " << s.victims_by_recency << ", switches "
                     << s.mode_switches);
  CHECK_FALSE(p.evicting_by_recency());
  CHECK(s.mode_switches >= 1);
  CHECK(s.victims_by_recency < s.victims / 2);
}

TEST_CASE("policies track exactly what a model says under random operations") {
  uint64_t seed = mc::TestSeed("eviction randomized test");
  std::mt19937_64 rng(seed);
  for (int mode = 0; mode < 3; ++mode)  // hashed ids, slotted ids, slotted with facts
  for (const char* name : {"lru", "adaptive", "probation"}) {
    CAPTURE(name);
    CAPTURE(mode);
    const IdSpace ids = mode == 0 ? IdSpace::kAny : IdSpace::kSlotted;
    auto p = MakeEvictionPolicy(name, rng() % 2 ? 0 : 50, ids);
    SlotFacts facts;
    if (mode == 2) p->UseFacts(&facts);
    std::set<ObjectId> model;
    std::set<ObjectId> pinned;
    // kSlotted ids as the master makes them: generation << 32 | slot, slots
    // reused once their object is gone, a stale id one generation behind.
    std::vector<uint32_t> generations, free_slots;
    ObjectId next = 1;
    auto new_id = [&]() -> ObjectId {
      if (ids == IdSpace::kAny) return next++;
      uint32_t slot;
      if (!free_slots.empty() && rng() % 4 != 0) {
        size_t i = rng() % free_slots.size();
        slot = free_slots[i];
        free_slots.erase(free_slots.begin() + long(i));
      } else {
        slot = static_cast<uint32_t>(generations.size());
        generations.push_back(0);
      }
      return ObjectId{++generations[slot]} << 32 | slot;
    };
    auto gone = [&](ObjectId id) {
      model.erase(id);
      pinned.erase(id);
      if (ids == IdSpace::kSlotted) free_slots.push_back(static_cast<uint32_t>(id));
    };
    for (int step = 0; step < 20000; ++step) {
      uint64_t op = rng() % 10;
      if (op < 4 || model.empty()) {
        ObjectId id = new_id();
        const uint64_t key_hash = rng() % 300, size = 1 + rng() % 1000;
        if (ids == IdSpace::kSlotted) facts.Set(id, key_hash, size);
        p->OnInsert(id, key_hash, size);
        model.insert(id);
      } else if (op < 7) {
        ObjectId id = *std::next(model.begin(), long(rng() % model.size()));
        p->OnAccess(id);
        p->OnRemove(id - (ObjectId{1} << 32));  // a stale id of the slot: ignored
      } else if (op < 8) {
        ObjectId id = *std::next(model.begin(), long(rng() % model.size()));
        p->OnRemove(id);
        gone(id);
      } else if (op < 9) {
        pinned.insert(*std::next(model.begin(), long(rng() % model.size())));
      } else {
        auto v = p->NextVictim([&](ObjectId id) { return !pinned.count(id); });
        bool any_evictable = model.size() > pinned.size();
        REQUIRE(v.has_value() == any_evictable);
        if (v) {
          REQUIRE(model.count(*v) == 1);
          REQUIRE(pinned.count(*v) == 0);
          gone(*v);
        }
      }
      REQUIRE(p->tracked() == model.size());
    }
  }
}

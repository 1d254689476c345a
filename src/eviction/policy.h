// EvictionPolicy: the seam through which the master chooses what to evict.
//
// The master tells the policy about every complete object (OnInsert), every
// read or existence check that hit it (OnAccess) and every removal that was
// not the policy's choice (OnRemove). When space is needed it asks for
// victims with NextVictim, passing a predicate that says whether an object
// may be evicted right now (no lease, not pinned in this round, complete).
// Policies may keep "ghost" history of evicted keys by key hash to adapt
// (ARC-style). Not thread-safe: the master calls it under its own lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

namespace mc {
class Prefaulter;
}

namespace mc::master {

// Stable handle of an object inside the master while it exists.
using ObjectId = uint64_t;

// What a policy has done, for the master's metrics.
struct EvictionStats {
  uint64_t victims = 0;
  // Of `victims`: chosen by plain recency because the adaptive policy's duel
  // had exact LRU ahead (0 for policies without a duel).
  uint64_t victims_by_recency = 0;
  // Times the adaptive policy went from ARC's lists to plain recency or back.
  uint64_t mode_switches = 0;
  // Objects NextVictim examined to find its victims (its cost; 0 for
  // policies that do not count).
  uint64_t victim_steps = 0;
};

// What the caller of a policy over kSlotted ids (IdSpace below) knows of
// the live object at a slot, so the policy need not keep its own copies (24
// bytes an object of a master's ~128). Each must answer what the object's
// OnInsert said, from that call until the policy stops tracking it (its
// OnRemove, or NextVictim returning it): the caller changes no tracked
// object's size and reuses no slot before that.
class ObjectFacts {
 public:
  virtual ~ObjectFacts() = default;
  virtual ObjectId IdAt(uint32_t slot) const = 0;
  virtual uint64_t KeyHashAt(uint32_t slot) const = 0;
  virtual uint64_t SizeAt(uint32_t slot) const = 0;
};

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;

  // Called before the first OnInsert by a caller of kSlotted ids that can
  // answer ObjectFacts (it must outlive the policy). A policy may then read
  // the facts from it instead of copying them; others ignore it.
  virtual void UseFacts(const ObjectFacts* /*facts*/) {}

  // `key_hash` identifies the key across remove/re-put (for ghost history).
  virtual void OnInsert(ObjectId id, uint64_t key_hash, uint64_t size_bytes) = 0;
  // Room for about `objects` live objects (a journal load knows its size):
  // a table grown to that size by doubling faults in every page twice.
  virtual void Reserve(size_t /*objects*/) {}
  // Queues what Reserve set aside on `prefaulter` (a load's helper thread
  // faults it in ahead of the inserts).
  virtual void PrefaultReserved(Prefaulter& /*prefaulter*/) const {}
  virtual void OnAccess(ObjectId id) = 0;
  // The object left the pool for a reason other than NextVictim.
  virtual void OnRemove(ObjectId id) = 0;
  // A read asked for a key that is not in the pool. A miss on a key the
  // policy evicted is the signal that it evicted the wrong thing, whether or
  // not the reader then puts the key back (a bench or an engine that gives
  // up does not).
  virtual void OnMiss(uint64_t /*key_hash*/) {}

  // Picks the next object to evict among those `evictable` accepts and stops
  // tracking it (it becomes ghost history if the policy keeps any). Returns
  // nullopt when no tracked object is evictable. Objects `evictable` rejects
  // stay tracked, in place.
  virtual std::optional<ObjectId> NextVictim(
      const std::function<bool(ObjectId)>& evictable) = 0;

  virtual std::string_view name() const = 0;
  // Number of live objects tracked.
  virtual size_t tracked() const = 0;
  virtual EvictionStats stats() const { return {}; }
  // Heap bytes the policy holds (the master's memory breakdown; 0: not
  // counted).
  virtual size_t memory_bytes() const { return 0; }
};

// What a caller promises about the ids it passes, so a policy can index them
// cheaply.
enum class IdSpace : uint8_t {
  kAny,      // any 64-bit values
  // The low 32 bits are a slot of the caller's own table: unique among live
  // objects and dense (the master's ObjectId, generation << 32 | slot).
  kSlotted,
};

// The names MakeEvictionPolicy knows, the master's default first.
inline constexpr std::string_view kEvictionPolicyNames[] = {"adaptive", "probation", "lru"};

// "adaptive" (the master's default: ARC with a duel against LRU),
// "probation" (new objects on probation in a small queue, see probation.h) or "lru"
// (approximate LRU); nullptr if unknown.
// `capacity_hint_objects` sizes ghost history; 0 lets the policy grow it with
// the number of tracked objects.
std::unique_ptr<EvictionPolicy> MakeEvictionPolicy(std::string_view name,
                                                   size_t capacity_hint_objects,
                                                   IdSpace ids = IdSpace::kAny);

}  // namespace mc::master

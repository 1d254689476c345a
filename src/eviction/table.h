// Compact building blocks shared by the eviction policies: an open-addressing
// map from a 64-bit key (object id or key hash) to a 32-bit slot, and a pool
// of nodes linked into intrusive doubly-linked lists by slot index.
//
// Why not std::unordered_map / std::list: a node-based map costs ~40-60 bytes
// per entry and a std::list node another ~40; the master targets <= 200 bytes
// per object in total, and the policy aims at <= ~64. The map here costs 12
// bytes per bucket at <= 3/4 load (~16 per entry), list links 8 per node.
// Not thread-safe.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace mc::master::eviction {

inline constexpr uint32_t kNoSlot = UINT32_MAX;

// splitmix64 finalizer: ids are often sequential, so spread them first.
inline uint64_t MixBits(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// Linear probing with backward-shift deletion (no tombstones), so lookups
// stay short however many erases happen.
class SlotIndex {
 public:
  SlotIndex() { Rehash(kMinBuckets); }

  uint32_t Find(uint64_t key) const {
    for (size_t i = Home(key);; i = (i + 1) & mask_) {
      if (slots_[i] == kNoSlot) return kNoSlot;
      if (keys_[i] == key) return slots_[i];
    }
  }

  // `key` must be absent.
  void Insert(uint64_t key, uint32_t slot) {
    assert(slot != kNoSlot);
    if ((size_ + 1) * 4 > slots_.size() * 3) Rehash(slots_.size() * 2);
    size_t i = Home(key);
    while (slots_[i] != kNoSlot) {
      assert(keys_[i] != key && "SlotIndex::Insert of a present key");
      i = (i + 1) & mask_;
    }
    keys_[i] = key;
    slots_[i] = slot;
    ++size_;
  }

  // Returns false if absent.
  bool Erase(uint64_t key) {
    size_t i = Home(key);
    while (true) {
      if (slots_[i] == kNoSlot) return false;
      if (keys_[i] == key) break;
      i = (i + 1) & mask_;
    }
    // Shift later members of the probe run back into the hole when their
    // home position does not lie cyclically in (hole, j].
    for (size_t j = (i + 1) & mask_; slots_[j] != kNoSlot; j = (j + 1) & mask_) {
      size_t home = Home(keys_[j]);
      bool stays = (i <= j) ? (i < home && home <= j) : (i < home || home <= j);
      if (stays) continue;
      keys_[i] = keys_[j];
      slots_[i] = slots_[j];
      i = j;
    }
    slots_[i] = kNoSlot;
    --size_;
    return true;
  }

  size_t size() const { return size_; }
  size_t memory_bytes() const {
    return keys_.capacity() * sizeof(uint64_t) + slots_.capacity() * sizeof(uint32_t);
  }

 private:
  static constexpr size_t kMinBuckets = 16;

  size_t Home(uint64_t key) const { return MixBits(key) & mask_; }

  void Rehash(size_t buckets) {
    std::vector<uint64_t> old_keys = std::move(keys_);
    std::vector<uint32_t> old_slots = std::move(slots_);
    keys_.assign(buckets, 0);
    slots_.assign(buckets, kNoSlot);
    mask_ = buckets - 1;
    size_ = 0;
    for (size_t i = 0; i < old_slots.size(); ++i) {
      if (old_slots[i] != kNoSlot) Insert(old_keys[i], old_slots[i]);
    }
  }

  std::vector<uint64_t> keys_;
  std::vector<uint32_t> slots_;  // kNoSlot marks an empty bucket
  size_t mask_ = 0;
  size_t size_ = 0;
};

// Live object ids -> node slot, by the kind of ids the caller promised
// (IdSpace in policy.h). kSlotted ids (generation << 32 | slot, the slots
// dense and unique among live objects) index a plain array by slot: 8 bytes
// a slot of the caller's table, where the hashed SlotIndex costs 16-32 an
// entry. The generation is kept, so a stale id is not found, as in SlotIndex.
class IdIndex {
 public:
  explicit IdIndex(bool slotted) : slotted_(slotted) {}

  uint32_t Find(uint64_t id) const {
    if (!slotted_) return hashed_.Find(id);
    const uint32_t low = static_cast<uint32_t>(id);
    if (low >= by_slot_.size()) return kNoSlot;
    const Entry& e = by_slot_[low];
    return e.generation == id >> 32 ? e.slot : kNoSlot;
  }

  // `id` must be absent.
  void Insert(uint64_t id, uint32_t slot) {
    assert(slot != kNoSlot);
    if (!slotted_) return hashed_.Insert(id, slot);
    const uint32_t low = static_cast<uint32_t>(id);
    if (low >= by_slot_.size()) by_slot_.resize(size_t{low} + 1);
    Entry& e = by_slot_[low];
    assert(e.slot == kNoSlot && "IdIndex::Insert over a live id of the same slot");
    e = Entry{static_cast<uint32_t>(id >> 32), slot};
    ++size_;
  }

  // Returns false if absent.
  bool Erase(uint64_t id) {
    if (!slotted_) return hashed_.Erase(id);
    if (Find(id) == kNoSlot) return false;
    by_slot_[static_cast<uint32_t>(id)].slot = kNoSlot;
    --size_;
    return true;
  }

  size_t size() const { return slotted_ ? size_ : hashed_.size(); }
  size_t memory_bytes() const {
    return slotted_ ? by_slot_.capacity() * sizeof(Entry) : hashed_.memory_bytes();
  }

 private:
  struct Entry {
    uint32_t generation = 0;
    uint32_t slot = kNoSlot;
  };
  bool slotted_;
  SlotIndex hashed_;
  std::vector<Entry> by_slot_;
  size_t size_ = 0;
};

// One intrusive list: `lru` is the eviction end, `mru` the most recent.
struct NodeList {
  uint32_t lru = kNoSlot;
  uint32_t mru = kNoSlot;
  uint32_t count = 0;
  uint64_t bytes = 0;
};

// Nodes in a vector, reused through a free list threaded on `next`. A node
// type has `uint32_t prev, next` and `uint64_t size_bytes`.
template <typename Node>
class NodePool {
 public:
  Node& operator[](uint32_t slot) { return nodes_[slot]; }
  const Node& operator[](uint32_t slot) const { return nodes_[slot]; }

  uint32_t Allocate() {
    assert(!at_slots_ && "NodePool: Allocate after AllocateAt");
    if (free_ != kNoSlot) {
      uint32_t slot = free_;
      free_ = nodes_[slot].next;
      nodes_[slot] = Node{};
      return slot;
    }
    assert(nodes_.size() < kNoSlot && "eviction node pool exhausted");
    nodes_.push_back(Node{});
    return static_cast<uint32_t>(nodes_.size() - 1);
  }

  void Free(uint32_t slot) {
    nodes_[slot].next = free_;
    free_ = slot;
  }

  // A fresh node at `slot`, which the caller chose (and never frees with
  // Free): a pool whose slots are the caller's own (IdSpace::kSlotted).
  void AllocateAt(uint32_t slot) {
    assert(free_ == kNoSlot && slot != kNoSlot);
    at_slots_ = true;
    if (slot >= nodes_.size()) nodes_.resize(size_t{slot} + 1);
    nodes_[slot] = Node{};
  }

  void PushMru(NodeList& list, uint32_t slot) { PushMru(list, slot, nodes_[slot].size_bytes); }
  void Unlink(NodeList& list, uint32_t slot) { Unlink(list, slot, nodes_[slot].size_bytes); }

  // For nodes that keep no size of their own: the caller says it.
  void PushMru(NodeList& list, uint32_t slot, uint64_t size_bytes) {
    Node& n = nodes_[slot];
    n.prev = list.mru;
    n.next = kNoSlot;
    if (list.mru != kNoSlot) nodes_[list.mru].next = slot;
    list.mru = slot;
    if (list.lru == kNoSlot) list.lru = slot;
    ++list.count;
    list.bytes += size_bytes;
  }

  void Unlink(NodeList& list, uint32_t slot, uint64_t size_bytes) {
    Node& n = nodes_[slot];
    if (n.prev != kNoSlot) nodes_[n.prev].next = n.next; else list.lru = n.next;
    if (n.next != kNoSlot) nodes_[n.next].prev = n.prev; else list.mru = n.prev;
    assert(list.count > 0 && list.bytes >= size_bytes);
    --list.count;
    list.bytes -= size_bytes;
  }

  size_t memory_bytes() const { return nodes_.capacity() * sizeof(Node); }
  void Reserve(size_t nodes) { nodes_.reserve(nodes); }
  // The vector's memory as reserved: its start and capacity in bytes.
  std::pair<const void*, size_t> reserved() const {
    return {nodes_.data(), nodes_.capacity() * sizeof(Node)};
  }

 private:
  std::vector<Node> nodes_;
  uint32_t free_ = kNoSlot;
  bool at_slots_ = false;
};

// The live objects' nodes by ObjectId: a NodePool and the index from id to
// node. A node type has `ObjectId id` besides NodePool's fields. With
// kSlotted ids (generation << 32 | slot) the node of an object sits at the
// object's own slot, so there is no index at all (a bit a slot says which
// slots hold a node; the node's id rejects a stale generation); other ids
// go through a hashed SlotIndex. Which node an object gets never changes
// the lists' order, so both kinds of ids give the same policy decisions.
template <typename Node>
class TrackedNodes {
 public:
  explicit TrackedNodes(bool slotted) : slotted_(slotted) {}

  Node& operator[](uint32_t slot) { return pool_[slot]; }
  const Node& operator[](uint32_t slot) const { return pool_[slot]; }

  uint32_t Find(uint64_t id) const {
    if (!slotted_) return hashed_.Find(id);
    const uint32_t low = static_cast<uint32_t>(id);
    return low < live_.size() && live_[low] && pool_[low].id == id ? low : kNoSlot;
  }

  // A fresh node for `id` (which must be absent), its `id` set.
  uint32_t Add(uint64_t id) {
    uint32_t slot;
    if (slotted_) {
      slot = static_cast<uint32_t>(id);
      assert((slot >= live_.size() || !live_[slot]) && "two live ids of one slot");
      pool_.AllocateAt(slot);
      if (slot >= live_.size()) live_.resize(size_t{slot} + 1);
      live_[slot] = true;
    } else {
      slot = pool_.Allocate();
      hashed_.Insert(id, slot);
    }
    pool_[slot].id = id;
    ++size_;
    return slot;
  }

  // Frees a node Add returned (unlinked from every list first).
  void Remove(uint32_t slot) {
    assert(size_ > 0);
    --size_;
    if (slotted_) {
      assert(live_[slot]);
      live_[slot] = false;
      return;
    }
    const bool erased = hashed_.Erase(pool_[slot].id);
    assert(erased);
    (void)erased;
    pool_.Free(slot);
  }

  void PushMru(NodeList& list, uint32_t slot) { pool_.PushMru(list, slot); }
  void Unlink(NodeList& list, uint32_t slot) { pool_.Unlink(list, slot); }

  size_t size() const { return size_; }
  size_t memory_bytes() const {
    return pool_.memory_bytes() + hashed_.memory_bytes() + live_.capacity() / 8;
  }

 private:
  bool slotted_;
  NodePool<Node> pool_;
  SlotIndex hashed_;         // !slotted_: id -> node slot
  std::vector<bool> live_;   // slotted_: slots that hold a live node
  size_t size_ = 0;
};

}  // namespace mc::master::eviction

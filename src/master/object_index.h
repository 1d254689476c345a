// ObjectIndex: the master's objects by key, in byte order of the keys (what
// ListKeys' cursor relies on), one heap block per object.
//
// Why not std::map<std::string, ObjectRecord>: its node (32 bytes of tree
// links, a 32-byte std::string, the 48-byte record: a 128-byte malloc chunk)
// plus a second block for any key past 15 bytes (a 40-byte key: a 64-byte
// chunk) cost ~190 bytes an object before the slot table and the eviction
// policy. Here one block holds the record, the key bytes and the links of a
// skip list: the 40-byte record (whose spare bits hold the node's levels and
// key length), 8 bytes a level (3 in 4 nodes have one), the key: a 40-byte
// key with one level is an 88-byte block.
//
// A node's level count comes from a hash of its key (1 + pairs of trailing
// zero bits, so level i+1 is 1/4 as likely as level i): no random state, and
// the same keys give the same structure whatever the order of inserts.
// Nodes never move, so an iterator (a node) stays valid until its own node is
// erased, as with std::map. find / lower_bound / insert / erase cost
// O(log n) expected; inserting a key greater than every other one (a journal
// loaded in key order) costs O(levels). Not thread-safe.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "master/object_record.h"

namespace mc::master {

class ObjectIndex {
 public:
  static constexpr uint32_t kMaxLevels = 24;  // 4^24 keys before the lists thin out

  // A node is its record, `levels` links, then the key. The record's
  // index_bits hold the levels (5 bits) and the key's length (11 bits); a
  // key of kLongKeyBytes or more has its length in 4 bytes before its bytes.
  static constexpr uint32_t kLevelBits = 5;
  static constexpr uint32_t kLongKeyBytes = (1u << (16 - kLevelBits)) - 1;
  static_assert(kMaxLevels < (1u << kLevelBits));
  struct Node {
    ObjectRecord record;
    uint32_t levels() const { return record.index_bits & ((1u << kLevelBits) - 1); }
    std::string_view key() const {
      const char* at = reinterpret_cast<const char*>(links() + levels());
      const uint32_t length = record.index_bits >> kLevelBits;
      if (length < kLongKeyBytes) return {at, length};
      uint32_t long_length;
      std::memcpy(&long_length, at, sizeof long_length);
      return {at + sizeof long_length, long_length};
    }
    Node** links() { return reinterpret_cast<Node**>(this + 1); }
    Node* const* links() const { return reinterpret_cast<Node* const*>(this + 1); }
  };
  static_assert(sizeof(Node) == sizeof(ObjectRecord), "a node has no header of its own");

  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Node;
    using difference_type = std::ptrdiff_t;
    using pointer = Node*;
    using reference = Node&;
    iterator() = default;
    explicit iterator(Node* n) : n_(n) {}
    Node& operator*() const { return *n_; }
    Node* operator->() const { return n_; }
    iterator& operator++() {
      n_ = n_->links()[0];
      return *this;
    }
    iterator operator++(int) {
      iterator was = *this;
      ++*this;
      return was;
    }
    bool operator==(const iterator&) const = default;
    Node* node() const { return n_; }

   private:
    Node* n_ = nullptr;
  };

  ObjectIndex();
  ~ObjectIndex();  // frees every node and chunk
  ObjectIndex(const ObjectIndex&) = delete;
  ObjectIndex& operator=(const ObjectIndex&) = delete;

  iterator begin() const { return iterator(head_[0]); }
  iterator end() const { return iterator(); }
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  // The greatest key's node (end() when empty).
  iterator last() const { return iterator(tail_[0]); }

  iterator find(std::string_view key) const;
  iterator lower_bound(std::string_view key) const;  // first key >= `key`
  iterator upper_bound(std::string_view key) const;  // first key > `key`

  // Adds `key` (which must be absent) with a default record.
  iterator insert(std::string_view key);

  // Bulk building (a journal loaded in any order): nodes made by NewNode are
  // in no index until Build links them all at once, sorted, in O(n log n)
  // with cache-friendly comparisons instead of n searches of a growing
  // index, each a chain of cache misses. Build needs an empty index. Two
  // equal keys: it returns false with that key in `duplicate`, frees every
  // node and leaves the index empty.
  Node* NewNode(std::string_view key);
  void DeleteNode(Node* n);
  bool Build(std::vector<Node*> nodes, std::string* duplicate);
  void erase(iterator it);
  void clear();

  // Heap bytes of the nodes: the slab chunks (free blocks included) and the
  // nodes too large for them.
  size_t memory_bytes() const {
    return chunks_.size() * kSlabChunkBytes + chunks_.capacity() * sizeof(void*) + large_bytes_;
  }
  // Bytes of the nodes themselves (each rounded up to 8).
  size_t node_bytes() const { return node_bytes_; }

  // The levels a key's node gets (for tests).
  static uint32_t LevelsOf(std::string_view key);

  // O(links): level 0 holds size() nodes in strictly increasing key order,
  // each with LevelsOf(its key) levels; level l links exactly the nodes
  // with more than l levels, in the same order, and ends at tail l; no level
  // at or above the levels in use holds a node. INTERNAL_ERROR naming the
  // first broken rule. For tests and MC_DEBUG_CHECK_OK (common/debug_check.h).
  Status CheckInvariants() const;

 private:
  Node** LinksOf(Node* n) { return n == nullptr ? head_ : n->links(); }
  // Links `n`, whose key is above every other, at the end of each level.
  void Append(Node* n);
  // Node memory: nodes up to kMaxSlabBytes come from per-size free lists
  // and 64 KiB chunks carved in 8-byte steps, with no malloc header and no
  // rounding to 16 (a 40-byte key's node: 104 bytes, not a 112-byte chunk).
  // A freed node's bytes go back to its size's list, not to malloc.
  static constexpr size_t kMaxSlabBytes = 512;
  static constexpr size_t kSlabChunkBytes = 64 << 10;
  void* Allocate(size_t bytes);
  void Release(void* p, size_t bytes);
  void PushFree(void* p, size_t bytes);  // onto the free list of its size
  static size_t NodeBytes(uint32_t levels, size_t key_bytes) {
    const size_t length_bytes = key_bytes >= kLongKeyBytes ? sizeof(uint32_t) : 0;
    return (sizeof(Node) + levels * sizeof(Node*) + length_bytes + key_bytes + 7) & ~size_t{7};
  }

  // Fills `before[l]` with the last node (null: the head) whose key is below
  // `key` on each level, top to bottom.
  void Predecessors(std::string_view key, Node** before) const;

  Node* head_[kMaxLevels] = {};
  Node* tail_[kMaxLevels] = {};  // the last node on each level
  uint32_t levels_ = 1;          // levels in use
  size_t size_ = 0;
  struct FreeBlock {
    FreeBlock* next;
  };
  FreeBlock* free_[kMaxSlabBytes / 8 + 1] = {};  // by size / 8
  char* bump_ = nullptr;  // the rest of the newest chunk
  size_t bump_left_ = 0;
  std::vector<void*> chunks_;
  size_t large_bytes_ = 0;  // nodes past kMaxSlabBytes
  size_t node_bytes_ = 0;   // every node
};

}  // namespace mc::master

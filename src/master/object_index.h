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
//
// A node also has a 4-byte handle (HandleOf, NodeAt), for tables that keep
// one per object (the master's slot table) where a pointer takes 8: nodes
// are carved from 2 MiB chunks aligned to their size, whose first 8 bytes
// hold the chunk's number, and a handle is that number and the node's
// offset / 8 in its chunk. So the nodes of one index take at most
// kMaxNodeArenaBytes (32 GiB: some 350 million 40-byte keys).
#pragma once

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <iterator>
#include <string>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "common/ceilings.h"
#include "common/prefault.h"
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

  // `huge_pages`: carve nodes from reserved huge pages (hugetlb, 2 MiB)
  // while the system has free ones, ordinary memory after. A chunk is one
  // such page: no fault per 4 KiB and fewer TLB misses; whether a start is
  // faster depends on the host (mooncake-master(1) has figures).
  explicit ObjectIndex(bool huge_pages = false);
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
  // Handles: 0 is no node, every node's is other.
  static constexpr uint32_t kChunkBits = 21;
  static constexpr size_t kChunkBytes = size_t{1} << kChunkBits;
  static constexpr uint32_t kOffsetBits = kChunkBits - 3;  // offsets in 8-byte steps
  static constexpr size_t kMaxChunks = size_t{1} << (32 - kOffsetBits);
  static constexpr uint64_t kMaxNodeArenaBytes = uint64_t{kMaxChunks} * kChunkBytes;
  uint32_t HandleOf(const Node* n) const {
    const auto at = reinterpret_cast<uintptr_t>(n);
    const uintptr_t chunk = at & ~(uintptr_t{kChunkBytes} - 1);
    uint64_t number;
    std::memcpy(&number, reinterpret_cast<const void*>(chunk), sizeof number);
    return static_cast<uint32_t>(number << kOffsetBits | (at - chunk) >> 3);
  }
  Node* NodeAt(uint32_t handle) const {
    if (handle == 0) return nullptr;
    return reinterpret_cast<Node*>(chunks_[handle >> kOffsetBits] +
                                   (size_t{handle & ((1u << kOffsetBits) - 1)} << 3));
  }

  // Where a key is or would go: a search's predecessors, which insert
  // reuses while the index is unchanged (no insert, erase or clear since),
  // so a put's lookup and insert cost one search, not two.
  struct Position {
    Node* before[kMaxLevels];
    uint64_t version = 0;  // the index's version when searched; 0: none
  };
  iterator find(std::string_view key, Position* where) const;
  iterator lower_bound(std::string_view key) const;  // first key >= `key`
  iterator upper_bound(std::string_view key) const;  // first key > `key`

  // Adds `key` (which must be absent) with a default record; `where`, from
  // a find of the same key, saves the search if still current.
  iterator insert(std::string_view key, const Position* where = nullptr);

  // Bulk building (a journal loaded in any order): nodes made by NewNode are
  // in no index until Build links them all at once, sorted, in O(n log n)
  // with cache-friendly comparisons instead of n searches of a growing
  // index, each a chain of cache misses. Build needs an empty index. Two
  // equal keys: it returns false with that key in `duplicate`, frees every
  // node and leaves the index empty.
  Node* NewNode(std::string_view key);
  // The same, given std::hash of `key` (which picks its levels).
  Node* NewNode(std::string_view key, uint64_t key_hash);
  void DeleteNode(Node* n);
  // The nodes are given by their handles (HandleOf), in any order; 0s are
  // skipped, so a table of handles by slot serves as it is. `scratch`: an
  // array Build may reuse for its sort (its contents are lost), so that a
  // load faults in no fresh pages for it.
  bool Build(std::span<const uint32_t> handles, std::string* duplicate,
             std::vector<std::pair<uint64_t, uint64_t>> scratch = {});
  void erase(iterator it);
  void clear();

  // While set (a bulk load: not null), new chunks are allocated ahead and
  // faulted in by `prefaulter`'s thread; null frees the spare ones.
  void SetPrefaulter(Prefaulter* prefaulter);
  // Chunks carved from hugetlb pages (not in the process's VmRSS).
  size_t huge_chunks() const { return static_cast<size_t>(std::count(huge_chunks_.begin(), huge_chunks_.end(), true)); }
  // Heap bytes of the nodes: the chunks up to the newest one's unused tail
  // (free blocks included), and the chunk and free-list tables.
  size_t memory_bytes() const {
    return chunks_.size() * kChunkBytes - bump_left_ + chunks_.capacity() * sizeof(char*) +
           free_.capacity() * sizeof(FreeBlock*) + fingers_.capacity() * sizeof(Finger);
  }
  // Bytes of the nodes themselves (each rounded up to 8).
  size_t node_bytes() const { return node_bytes_; }

  // The levels a key's node gets (for tests).
  static uint32_t LevelsOf(std::string_view key);
  static uint32_t LevelsOfHash(uint64_t key_hash);

  // O(links): level 0 holds size() nodes in strictly increasing key order,
  // each with LevelsOf(its key) levels; level l links exactly the nodes
  // with more than l levels, in the same order, and ends at tail l; no level
  // at or above the levels in use holds a node. INTERNAL_ERROR naming the
  // first broken rule. For tests and MC_DEBUG_CHECK_OK (common/debug_check.h).
  Status CheckInvariants() const;

 private:
  Node** LinksOf(Node* n) { return n == nullptr ? head_ : n->links(); }
  // Node memory: nodes come from per-size free lists and chunks carved in
  // 8-byte steps, with no malloc header and no rounding to 16 (a 40-byte
  // key's node: 88 bytes, not a 96-byte chunk). A freed node's bytes go
  // back to its size's list, not to malloc. Keys are at most
  // kMaxStringBytes (what the wire carries), so every node fits a chunk.
  void* Allocate(size_t bytes);
  void Release(void* p, size_t bytes);
  void PushFree(void* p, size_t bytes);  // onto the free list of its size
  void NewChunk();
  struct Chunk {
    char* at = nullptr;
    bool huge = false;  // a hugetlb page (munmap), else operator new
  };
  Chunk AllocateChunk();
  static void FreeChunk(Chunk c);
  static constexpr size_t NodeBytes(uint32_t levels, size_t key_bytes) {
    const size_t length_bytes = key_bytes >= kLongKeyBytes ? sizeof(uint32_t) : 0;
    return (sizeof(Node) + levels * sizeof(Node*) + length_bytes + key_bytes + 7) & ~size_t{7};
  }
  // NodeBytes(kMaxLevels, kMaxStringBytes), checked in NewNode.
  static constexpr size_t kMaxNodeBytes =
      (sizeof(ObjectRecord) + kMaxLevels * sizeof(void*) + sizeof(uint32_t) + kMaxStringBytes +
       7) & ~size_t{7};
  static_assert(kMaxNodeBytes + sizeof(uint64_t) <= kChunkBytes);

  // Fills `before[l]` with the last node (null: the head) whose key is below
  // `key` on each level l below `need` (and below the levels in use).
  void Predecessors(std::string_view key, Node** before, uint32_t need = kMaxLevels) const;

  // Fingers: the nodes on level kFingerLevel (1 in 4^5 has more levels
  // than that), in key order, each with its key's first 8 bytes. A search
  // that needs no predecessor above that level binary-searches them, an
  // array mostly in cache, and walks the skip list down from there: the
  // levels above cost a cache miss or more a step when walked. Inserting or
  // erasing such a node moves the entries after it (amortized a few hundred
  // bytes an insert at 50 million keys).
  static constexpr uint32_t kFingerLevel = 5;
  struct Finger {
    uint64_t prefix;  // the key's first 8 bytes, big-endian, zero-padded
    Node* node;
  };
  static uint64_t PrefixOf(std::string_view key);
  // The index of the first finger whose key is not below `key`.
  size_t FingerAt(std::string_view key) const;
  std::vector<Finger> fingers_;
  // Build's linking: nodes in increasing key order make a chain of their
  // own (no other node's links change), so two halves link at once and
  // are joined at the seam.
  struct Chain {
    Node* head[kMaxLevels] = {};
    Node* tail[kMaxLevels] = {};
    uint32_t levels = 0;
    size_t size = 0;
    std::vector<Finger> fingers;
  };
  static void LinkChain(const std::pair<uint64_t, uint64_t>* begin,
                        const std::pair<uint64_t, uint64_t>* end, Chain* chain);
  void AdoptChains(Chain& first, Chain& second);

  Node* head_[kMaxLevels] = {};
  Node* tail_[kMaxLevels] = {};  // the last node on each level
  uint32_t levels_ = 1;          // levels in use
  size_t size_ = 0;
  uint64_t version_ = 1;  // changes at every insert, erase and clear (Position)
  struct FreeBlock {
    FreeBlock* next;
  };
  std::vector<FreeBlock*> free_;  // by size / 8
  char* bump_ = nullptr;  // the rest of the newest chunk
  size_t bump_left_ = 0;
  std::vector<char*> chunks_;  // by number
  std::vector<bool> huge_chunks_;  // by number: mapped from hugetlb pages
  bool try_huge_pages_;  // false after the pool ran dry (or when not asked)
  // While a prefaulter is set (a bulk load), chunks allocated ahead of use.
  static constexpr size_t kPrefaultChunks = 16;
  Prefaulter* prefaulter_ = nullptr;
  std::deque<Chunk> spare_;
  size_t node_bytes_ = 0;      // every node
};

}  // namespace mc::master

#include "master/object_index.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <thread>

#include "common/debug_check.h"
#include "common/parallel_sort.h"
#include "eviction/table.h"

namespace mc::master {

namespace {
// splitmix64's finalizer over the library's string hash: every bit of the
// result depends on every byte, so trailing zeros are as likely as coin tosses.
uint64_t Mix(uint64_t x) { return eviction::MixBits(x); }
}  // namespace

ObjectIndex::ObjectIndex(bool huge_pages)
    : free_(kMaxNodeBytes / 8 + 1, nullptr), try_huge_pages_(huge_pages) {}

ObjectIndex::~ObjectIndex() {
  clear();
  for (size_t i = 0; i < chunks_.size(); ++i) FreeChunk({chunks_[i], huge_chunks_[i]});
  SetPrefaulter(nullptr);
}

// One 2 MiB hugetlb page (aligned to its size, as a chunk must be), or
// nullptr when the pool has none free (mmap reserves the page up front, so
// a later touch cannot fail).
static char* MapHugeChunk() {
  static_assert(ObjectIndex::kChunkBytes == size_t{2} << 20, "a chunk is one 2 MiB huge page");
  void* p = ::mmap(nullptr, ObjectIndex::kChunkBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (21 << MAP_HUGE_SHIFT), -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
}

ObjectIndex::Chunk ObjectIndex::AllocateChunk() {
  char* chunk = try_huge_pages_ ? MapHugeChunk() : nullptr;
  if (try_huge_pages_ && chunk == nullptr) try_huge_pages_ = false;  // the pool ran dry
  if (chunk != nullptr) return {chunk, true};
  return {static_cast<char*>(::operator new(kChunkBytes, std::align_val_t{kChunkBytes})), false};
}

void ObjectIndex::FreeChunk(Chunk c) {
  if (c.huge)
    ::munmap(c.at, kChunkBytes);
  else
    ::operator delete(c.at, std::align_val_t{kChunkBytes});
}

void ObjectIndex::SetPrefaulter(Prefaulter* prefaulter) {
  prefaulter_ = prefaulter;
  if (prefaulter_ == nullptr) {
    for (Chunk c : spare_) FreeChunk(c);
    spare_.clear();
  }
}

void ObjectIndex::NewChunk() {
  // The tail of the old chunk goes to the free list of its size, so no
  // byte is lost for good.
  if (bump_left_ >= sizeof(FreeBlock)) PushFree(bump_, bump_left_);
  if (chunks_.size() >= kMaxChunks) throw std::bad_alloc();  // kMaxNodeArenaBytes
  // With a prefaulter the chunks are allocated kPrefaultChunks ahead of
  // their use and faulted in by its thread meanwhile.
  while (prefaulter_ != nullptr && spare_.size() < kPrefaultChunks) {
    spare_.push_back(AllocateChunk());
    prefaulter_->Add(spare_.back().at, kChunkBytes);
  }
  Chunk next;
  if (!spare_.empty()) {
    next = spare_.front();
    spare_.pop_front();
  } else {
    next = AllocateChunk();
  }
  char* chunk = next.at;
  const bool huge = next.huge;
  const uint64_t number = chunks_.size();
  std::memcpy(chunk, &number, sizeof number);
  chunks_.push_back(chunk);
  huge_chunks_.push_back(huge);
  bump_ = chunk + sizeof number;  // a handle is never 0
  bump_left_ = kChunkBytes - sizeof number;
}

void* ObjectIndex::Allocate(size_t bytes) {
  assert(bytes % 8 == 0 && bytes <= kMaxNodeBytes);
  if (FreeBlock* f = free_[bytes / 8]) {
    free_[bytes / 8] = f->next;
    node_bytes_ += bytes;
    return f;
  }
  if (bump_left_ < bytes) NewChunk();
  void* p = bump_;
  bump_ += bytes;
  bump_left_ -= bytes;
  node_bytes_ += bytes;
  return p;
}

void ObjectIndex::Release(void* p, size_t bytes) {
  node_bytes_ -= bytes;
  PushFree(p, bytes);
}

void ObjectIndex::PushFree(void* p, size_t bytes) {
  auto* f = static_cast<FreeBlock*>(p);
  f->next = free_[bytes / 8];
  free_[bytes / 8] = f;
}

uint32_t ObjectIndex::LevelsOf(std::string_view key) {
  return LevelsOfHash(std::hash<std::string_view>()(key));
}

uint32_t ObjectIndex::LevelsOfHash(uint64_t key_hash) {
  const uint64_t h = Mix(key_hash);
  const uint32_t levels = 1 + static_cast<uint32_t>(std::countr_zero(h | (1ull << 63))) / 2;
  return levels < kMaxLevels ? levels : kMaxLevels;
}

uint64_t ObjectIndex::PrefixOf(std::string_view key) {
  uint64_t word = 0;
  for (size_t i = 0; i < 8; ++i)
    word = word << 8 | (i < key.size() ? static_cast<unsigned char>(key[i]) : 0u);
  return word;
}

size_t ObjectIndex::FingerAt(std::string_view key) const {
  const uint64_t prefix = PrefixOf(key);
  // Prefixes order keys weakly: equal ones compare the keys.
  return std::partition_point(fingers_.begin(), fingers_.end(),
                              [&](const Finger& f) {
                                return f.prefix < prefix ||
                                       (f.prefix == prefix && f.node->key() < key);
                              }) -
         fingers_.begin();
}

void ObjectIndex::Predecessors(std::string_view key, Node** before, uint32_t need) const {
  Node* x = nullptr;  // the head
  uint32_t top = levels_;
  if (need <= kFingerLevel && levels_ > kFingerLevel) {
    // Level kFingerLevel links exactly the fingers: the last one below the
    // key is where a walk from the top would leave that level.
    const size_t at = FingerAt(key);
    x = at == 0 ? nullptr : fingers_[at - 1].node;
    top = kFingerLevel;
  }
  for (uint32_t l = top; l-- > 0;) {
    Node* const* links = x == nullptr ? head_ : x->links();
    for (Node* next = links[l]; next != nullptr && next->key() < key; next = links[l]) {
      x = next;
      links = x->links();
    }
    if (l < need) before[l] = x;
  }
}

ObjectIndex::iterator ObjectIndex::lower_bound(std::string_view key) const {
  Node* before[kMaxLevels];
  Predecessors(key, before, 1);
  return iterator(before[0] == nullptr ? head_[0] : before[0]->links()[0]);
}

ObjectIndex::iterator ObjectIndex::find(std::string_view key) const {
  iterator it = lower_bound(key);
  return it != end() && it->key() == key ? it : end();
}

ObjectIndex::iterator ObjectIndex::find(std::string_view key, Position* where) const {
  Predecessors(key, where->before, LevelsOf(key));  // what its insert needs
  where->version = version_;
  Node* at = where->before[0] == nullptr ? head_[0] : where->before[0]->links()[0];
  return at != nullptr && at->key() == key ? iterator(at) : end();
}

ObjectIndex::iterator ObjectIndex::upper_bound(std::string_view key) const {
  iterator it = lower_bound(key);
  if (it != end() && it->key() == key) ++it;
  return it;
}

ObjectIndex::Node* ObjectIndex::NewNode(std::string_view key) {
  return NewNode(key, std::hash<std::string_view>()(key));
}

ObjectIndex::Node* ObjectIndex::NewNode(std::string_view key, uint64_t key_hash) {
  static_assert(NodeBytes(kMaxLevels, kMaxStringBytes) == kMaxNodeBytes);
  assert(key.size() <= kMaxStringBytes);
  assert(key_hash == std::hash<std::string_view>()(key));
  const uint32_t levels = LevelsOfHash(key_hash);
  Node* n = static_cast<Node*>(Allocate(NodeBytes(levels, key.size())));
  new (&n->record) ObjectRecord();
  const auto length = static_cast<uint32_t>(key.size());
  char* at = reinterpret_cast<char*>(n->links() + levels);
  if (length >= kLongKeyBytes) {
    std::memcpy(at, &length, sizeof length);
    at += sizeof length;
  }
  n->record.index_bits =
      static_cast<uint16_t>(std::min(length, kLongKeyBytes) << kLevelBits | levels);
  std::memcpy(at, key.data(), key.size());
  assert(n->key() == key && n->levels() == levels);
  return n;
}

void ObjectIndex::DeleteNode(Node* n) {
  const size_t bytes = NodeBytes(n->levels(), n->key().size());
  n->record.~ObjectRecord();
  Release(n, bytes);
}

namespace {

using SortEntry = std::pair<uint64_t, uint64_t>;  // (8 bytes of the key, node address)

ObjectIndex::Node* NodeOf(const SortEntry& e) { return reinterpret_cast<ObjectIndex::Node*>(e.second); }

// The 8 bytes of `k` from `at`, big-endian, zero past its end (which keeps
// a key before its extensions, up to the length tie-break below).
uint64_t WordAt(std::string_view k, size_t at) {
  uint64_t word = 0;
  for (size_t i = 0; i < 8; ++i) {
    word = word << 8 | (at + i < k.size() ? static_cast<unsigned char>(k[at + i]) : 0u);
  }
  return word;
}

// [b, e) is sorted by the words at `at`, and its keys agree on every byte
// before `at`: orders each run of equal words by the words that follow,
// fetching the run's keys once a level, until the keys differ or end
// (then the shorter first). Comparing whole keys instead fetched two nodes
// each comparison: with engines' long shared prefixes (a model name, a
// tenant) most comparisons tie on one word, and a 75M-object load spent
// over two minutes in them.
void RefineRuns(SortEntry* b, SortEntry* e, size_t at) {
  auto by_word = [](const SortEntry& x, const SortEntry& y) { return x.first < y.first; };
  for (SortEntry* run = b; run < e;) {
    SortEntry* end = run + 1;
    while (end < e && end->first == run->first) ++end;
    if (end - run > 1) {
      const size_t next = at + 8;
      bool any_longer = false;
      for (SortEntry* x = run; x < end; ++x) {
        const std::string_view k = NodeOf(*x)->key();
        x->first = WordAt(k, next);
        any_longer = any_longer || k.size() > next;
      }
      if (any_longer) {
        std::sort(run, end, by_word);
        RefineRuns(run, end, next);
      } else {
        // Every key ends within the bytes compared: equal up to the
        // shorter one's end, so the shorter comes first (equal lengths:
        // equal keys, which the caller reports).
        for (SortEntry* x = run; x < end; ++x) x->first = NodeOf(*x)->key().size();
        std::sort(run, end, by_word);
      }
    }
    run = end;
  }
}

}  // namespace

bool ObjectIndex::Build(std::span<const uint32_t> handles, std::string* duplicate,
                        std::vector<std::pair<uint64_t, uint64_t>> scratch) {
  assert(empty());
  // Sort by the 8 bytes after the prefix every key shares, then each run
  // of equal words by the next 8 (RefineRuns): the words sit in one array,
  // so most comparisons miss no cache.
  // (word, node address): the scratch array's element type, so its pages,
  // already faulted in, hold the sort.
  using Entry = SortEntry;
  auto node_of = NodeOf;
  auto live = std::find_if(handles.begin(), handles.end(), [](uint32_t h) { return h != 0; });
  if (live == handles.end()) return true;
  const std::string_view first = NodeAt(*live)->key();
  // Each pass over the nodes is a stream of cache misses (50M nodes are
  // gigabytes): large loads split each into halves of the handles, one on
  // a thread.
  const bool two = handles.size() >= kParallelSortMinElements;
  const size_t split = two ? handles.size() / 2 : handles.size();
  auto in_halves = [&](auto&& pass) {
    if (!two) return pass(size_t{0}, handles.size());
    std::thread other([&] { pass(size_t{0}, split); });
    pass(split, handles.size());
    other.join();
  };
  // The first pass finds the prefix every key shares and counts the nodes
  // of each half, the second writes the entries.
  size_t commons[2] = {first.size(), first.size()};
  size_t counts[2] = {0, 0};
  in_halves([&](size_t b, size_t e) {
    size_t& common = commons[b == 0 ? 0 : 1];
    size_t count = 0;
    for (size_t at = b; at < e; ++at) {
      if (handles[at] == 0) continue;
      ++count;
      const std::string_view k = NodeAt(handles[at])->key();
      size_t i = 0;
      const size_t limit = std::min(common, k.size());
      while (i < limit && k[i] == first[i]) ++i;
      common = i;
    }
    counts[b == 0 ? 0 : 1] = count;
  });
  const size_t common = std::min(commons[0], commons[1]);
  std::vector<Entry> entries = std::move(scratch);
  entries.resize(counts[0] + counts[1]);  // every entry is written below: a longer scratch is not zeroed
  in_halves([&](size_t b, size_t e) {
    Entry* out = entries.data() + (b == 0 ? 0 : counts[0]);
    for (size_t at = b; at < e; ++at) {
      if (handles[at] == 0) continue;
      const Node* n = NodeAt(handles[at]);
      *out++ = Entry(WordAt(n->key(), common), reinterpret_cast<uintptr_t>(n));
    }
  });
  ParallelSort(entries.begin(), entries.end(),
               [](const Entry& a, const Entry& b) { return a.first < b.first; });
  RefineRuns(entries.data(), entries.data() + entries.size(), common);
  for (size_t i = 1; i < entries.size(); ++i) {
    if (entries[i].first == entries[i - 1].first &&
        node_of(entries[i])->key() == node_of(entries[i - 1])->key()) {
      duplicate->assign(node_of(entries[i])->key());
      for (const Entry& e : entries) DeleteNode(node_of(e));
      return false;
    }
  }
  Chain chains[2];
  const Entry* b = entries.data();
  const Entry* e = b + entries.size();
  if (entries.size() >= kParallelSortMinElements) {
    const size_t half = entries.size() / 2;
    std::thread other([&] { LinkChain(b, b + half, &chains[0]); });
    LinkChain(b + half, e, &chains[1]);
    other.join();
  } else {
    LinkChain(b, e, &chains[1]);
  }
  AdoptChains(chains[0], chains[1]);
  MC_DEBUG_CHECK_OK(CheckInvariants());
  return true;
}

void ObjectIndex::LinkChain(const std::pair<uint64_t, uint64_t>* begin,
                            const std::pair<uint64_t, uint64_t>* end, Chain* chain) {
  // In key order the nodes are scattered over the chunks: fetching a few
  // ahead hides most of a cache miss a node (tens of seconds at 50M).
  constexpr ptrdiff_t kPrefetchAhead = 8;
  for (const auto* at = begin; at < end; ++at) {
    if (end - at > kPrefetchAhead) __builtin_prefetch(NodeOf(at[kPrefetchAhead]), 1);
    Node* n = NodeOf(*at);
    assert(chain->tail[0] == nullptr || chain->tail[0]->key() < n->key());
    const uint32_t levels = n->levels();
    if (levels > kFingerLevel) chain->fingers.push_back({PrefixOf(n->key()), n});
    for (uint32_t l = 0; l < levels; ++l) {
      (chain->tail[l] == nullptr ? chain->head[l] : chain->tail[l]->links()[l]) = n;
      n->links()[l] = nullptr;
      chain->tail[l] = n;
    }
    chain->levels = std::max(chain->levels, levels);
    ++chain->size;
  }
}

void ObjectIndex::AdoptChains(Chain& first, Chain& second) {
  assert(empty());
  for (uint32_t l = 0; l < kMaxLevels; ++l) {
    if (first.tail[l] != nullptr) first.tail[l]->links()[l] = second.head[l];
    head_[l] = first.head[l] != nullptr ? first.head[l] : second.head[l];
    tail_[l] = second.tail[l] != nullptr ? second.tail[l] : first.tail[l];
  }
  levels_ = std::max({uint32_t{1}, first.levels, second.levels});
  size_ = first.size + second.size;
  fingers_ = std::move(first.fingers);
  fingers_.insert(fingers_.end(), second.fingers.begin(), second.fingers.end());
  ++version_;
}

ObjectIndex::iterator ObjectIndex::insert(std::string_view key, const Position* where) {
  Node* before[kMaxLevels];
  const uint32_t levels = LevelsOf(key);
  const uint32_t known = std::min(levels, levels_);  // levels past levels_: the head
  if (where != nullptr && where->version == version_) {
    // Searched since the last change: the same levels are in use.
    std::copy(where->before, where->before + known, before);
  } else if (tail_[0] != nullptr && tail_[0]->key() < key) {
    // Past every key: the predecessors are the tails, no search.
    for (uint32_t l = 0; l < known; ++l) before[l] = tail_[l];
  } else {
    Predecessors(key, before, levels);
  }
  for (uint32_t l = known; l < levels; ++l) before[l] = nullptr;
  ++version_;
  if (levels > levels_) levels_ = levels;
  Node* n = NewNode(key);
  assert(before[0] == nullptr || before[0]->key() < key);
  if (levels > kFingerLevel) {
    fingers_.insert(fingers_.begin() + static_cast<ptrdiff_t>(FingerAt(key)),
                    {PrefixOf(key), n});
  }
  Node** links = n->links();
  for (uint32_t l = 0; l < levels; ++l) {
    Node** prev = LinksOf(before[l]);
    links[l] = prev[l];
    assert(links[l] == nullptr || key < links[l]->key());
    prev[l] = n;
    if (links[l] == nullptr) tail_[l] = n;
  }
  ++size_;
  return iterator(n);
}

void ObjectIndex::erase(iterator it) {
  Node* n = it.node();
  assert(n != nullptr);
  Node* before[kMaxLevels];
  Predecessors(n->key(), before, n->levels());
  ++version_;
  if (n->levels() > kFingerLevel) {
    const size_t at = FingerAt(n->key());
    assert(at < fingers_.size() && fingers_[at].node == n);
    fingers_.erase(fingers_.begin() + static_cast<ptrdiff_t>(at));
  }
  Node** links = n->links();
  for (uint32_t l = 0; l < n->levels(); ++l) {
    Node** prev = LinksOf(before[l]);
    assert(prev[l] == n);
    prev[l] = links[l];
    if (tail_[l] == n) tail_[l] = before[l];
  }
  while (levels_ > 1 && head_[levels_ - 1] == nullptr) --levels_;
  --size_;
  DeleteNode(n);
}

void ObjectIndex::clear() {
  for (Node* n = head_[0]; n != nullptr;) {
    Node* next = n->links()[0];
    DeleteNode(n);
    n = next;
  }
  for (uint32_t l = 0; l < kMaxLevels; ++l) head_[l] = tail_[l] = nullptr;
  fingers_.clear();
  ++version_;
  levels_ = 1;
  size_ = 0;
}

Status ObjectIndex::CheckInvariants() const {
  auto broken = [](std::string what) {
    return Error(ErrorCode::INTERNAL_ERROR, "object index: " + std::move(what));
  };
  if (levels_ < 1 || levels_ > kMaxLevels) return broken("levels in use out of range");
  if (levels_ > 1 && head_[levels_ - 1] == nullptr) return broken("top level in use is empty");
  // One walk of level 0; `expect[l]` is the node level l must link next.
  Node* expect[kMaxLevels];
  Node* last[kMaxLevels] = {};
  for (uint32_t l = 0; l < kMaxLevels; ++l) expect[l] = head_[l];
  size_t count = 0;
  const Node* prev = nullptr;
  for (Node* n = head_[0]; n != nullptr; n = n->links()[0]) {
    const std::string at = "node " + std::to_string(count);
    if (++count > size_) return broken("level 0 holds more nodes than size " +
                                       std::to_string(size_));
    if (prev != nullptr && !(prev->key() < n->key())) return broken(at + " is out of key order");
    if (n->levels() != LevelsOf(n->key()) || n->levels() > levels_) {
      return broken(at + " has " + std::to_string(n->levels()) + " levels");
    }
    for (uint32_t l = 0; l < n->levels(); ++l) {
      if (expect[l] != n) return broken(at + " is not linked on level " + std::to_string(l));
      expect[l] = n->links()[l];
      last[l] = n;
    }
    prev = n;
  }
  if (count != size_) {
    return broken("level 0 holds " + std::to_string(count) + " nodes, size is " +
                  std::to_string(size_));
  }
  size_t finger = 0;
  for (Node* n = head_[kFingerLevel]; n != nullptr; n = n->links()[kFingerLevel], ++finger) {
    if (finger >= fingers_.size() || fingers_[finger].node != n ||
        fingers_[finger].prefix != PrefixOf(n->key())) {
      return broken("finger " + std::to_string(finger) + " is not level " +
                    std::to_string(kFingerLevel) + "'s node");
    }
  }
  if (finger != fingers_.size()) return broken("more fingers than nodes on their level");
  for (uint32_t l = 0; l < kMaxLevels; ++l) {
    if (expect[l] != nullptr) return broken("level " + std::to_string(l) + " links a stray node");
    if (tail_[l] != last[l]) return broken("tail of level " + std::to_string(l) + " is stale");
  }
  return Status::Ok();
}

}  // namespace mc::master

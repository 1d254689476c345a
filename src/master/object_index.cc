#include "master/object_index.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <new>
#include <string>

#include "common/debug_check.h"
#include "eviction/table.h"

namespace mc::master {

namespace {
// splitmix64's finalizer over the library's string hash: every bit of the
// result depends on every byte, so trailing zeros are as likely as coin tosses.
uint64_t Mix(uint64_t x) { return eviction::MixBits(x); }
}  // namespace

ObjectIndex::ObjectIndex() : free_(kMaxNodeBytes / 8 + 1, nullptr) {}

ObjectIndex::~ObjectIndex() {
  clear();
  for (char* c : chunks_) ::operator delete(c, std::align_val_t{kChunkBytes});
}

void ObjectIndex::NewChunk() {
  // The tail of the old chunk goes to the free list of its size, so no
  // byte is lost for good.
  if (bump_left_ >= sizeof(FreeBlock)) PushFree(bump_, bump_left_);
  if (chunks_.size() >= kMaxChunks) throw std::bad_alloc();  // kMaxNodeArenaBytes
  char* chunk = static_cast<char*>(::operator new(kChunkBytes, std::align_val_t{kChunkBytes}));
  const uint64_t number = chunks_.size();
  std::memcpy(chunk, &number, sizeof number);
  chunks_.push_back(chunk);
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
  const uint64_t h = Mix(std::hash<std::string_view>()(key));
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
  static_assert(NodeBytes(kMaxLevels, kMaxStringBytes) == kMaxNodeBytes);
  assert(key.size() <= kMaxStringBytes);
  const uint32_t levels = LevelsOf(key);
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

void ObjectIndex::Append(Node* n) {
  assert(tail_[0] == nullptr || tail_[0]->key() < n->key());
  ++version_;
  if (n->levels() > kFingerLevel) fingers_.push_back({PrefixOf(n->key()), n});
  for (uint32_t l = 0; l < n->levels(); ++l) {
    LinksOf(tail_[l])[l] = n;
    n->links()[l] = nullptr;
    tail_[l] = n;
  }
  if (n->levels() > levels_) levels_ = n->levels();
  ++size_;
}

bool ObjectIndex::Build(std::vector<Node*> nodes, std::string* duplicate,
                        std::vector<std::pair<uint64_t, uint64_t>> scratch) {
  assert(empty());
  if (nodes.empty()) return true;
  // Sort by the 8 bytes after the prefix every key shares (zero-padded past
  // a key's end, which keeps a key before its extensions), the full keys
  // breaking ties: the words sit in one array, so most comparisons miss no
  // cache, where comparing keys would fetch two nodes each time.
  const std::string_view first = nodes[0]->key();
  size_t common = first.size();
  for (const Node* n : nodes) {
    const std::string_view k = n->key();
    size_t i = 0;
    const size_t limit = std::min(common, k.size());
    while (i < limit && k[i] == first[i]) ++i;
    common = i;
  }
  // (word, node address): the scratch array's element type, so its pages,
  // already faulted in, hold the sort.
  using Entry = std::pair<uint64_t, uint64_t>;
  auto node_of = [](const Entry& e) { return reinterpret_cast<Node*>(e.second); };
  std::vector<Entry> entries = std::move(scratch);
  entries.clear();
  entries.reserve(nodes.size());
  for (Node* n : nodes) {
    const std::string_view k = n->key();
    uint64_t word = 0;
    for (size_t i = 0; i < 8; ++i) {
      const size_t at = common + i;
      word = word << 8 | (at < k.size() ? static_cast<unsigned char>(k[at]) : 0u);
    }
    entries.emplace_back(word, reinterpret_cast<uintptr_t>(n));
  }
  std::vector<Node*>().swap(nodes);
  std::sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& b) {
    return a.first != b.first ? a.first < b.first : node_of(a)->key() < node_of(b)->key();
  });
  for (size_t i = 1; i < entries.size(); ++i) {
    if (entries[i].first == entries[i - 1].first &&
        node_of(entries[i])->key() == node_of(entries[i - 1])->key()) {
      duplicate->assign(node_of(entries[i])->key());
      for (const Entry& e : entries) DeleteNode(node_of(e));
      return false;
    }
  }
  for (const Entry& e : entries) Append(node_of(e));
  MC_DEBUG_CHECK_OK(CheckInvariants());
  return true;
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

// ObjectIndex against a std::map model: random inserts, erases and searches
// (lower_bound, upper_bound, find) on short keys that collide in prefixes,
// then the whole order compared.
#include "master/object_index.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/parallel_sort.h"
#include "common/test_seed.h"

using namespace mc;
using namespace mc::master;

namespace {

std::string RandomKey(std::mt19937_64& rng) {
  // Few letters and short lengths: prefixes of each other, equal keys, and
  // embedded zero bytes all come up.
  const size_t len = rng() % 6;
  std::string k;
  for (size_t i = 0; i < len; ++i) k.push_back("\0abc"[rng() % 4]);
  return k;
}

// The nodes' handles, as Build takes them; with `rng`, with 0s (free slots
// of the master's table) strewn among them, more of them early on.
std::vector<uint32_t> HandlesOf(const ObjectIndex& index, const std::vector<ObjectIndex::Node*>& nodes,
                                std::mt19937_64* rng = nullptr) {
  std::vector<uint32_t> handles;
  for (size_t i = 0; i < nodes.size(); ++i) {
    while (rng != nullptr && (*rng)() % (i < nodes.size() / 3 ? 2 : 9) == 0) handles.push_back(0);
    handles.push_back(index.HandleOf(nodes[i]));
  }
  return handles;
}

void CheckSame(const ObjectIndex& index, const std::map<std::string, uint64_t>& model) {
  const Status invariants = index.CheckInvariants();
  REQUIRE_MESSAGE(invariants.ok(), invariants.message());
  REQUIRE(index.size() == model.size());
  auto m = model.begin();
  for (auto it = index.begin(); it != index.end(); ++it, ++m) {
    REQUIRE(m != model.end());
    CHECK(it->key() == m->first);
    const uint32_t handle = index.HandleOf(it.node());
    CHECK(handle != 0);
    CHECK(index.NodeAt(handle) == it.node());
    CHECK(uint64_t{it->record.size_bytes} == m->second);
  }
  CHECK(m == model.end());
  if (model.empty()) CHECK(index.last() == index.end());
  else CHECK(index.last()->key() == model.rbegin()->first);
}

}  // namespace

TEST_CASE("the object index keeps keys in byte order as a std::map does") {
  std::mt19937_64 rng(TestSeed("object index model"));
  ObjectIndex index;
  std::map<std::string, uint64_t> model;
  for (int step = 0; step < 20000; ++step) {
    const std::string key = RandomKey(rng);
    const auto m = model.find(key);
    const auto found = index.find(key);
    REQUIRE((found == index.end()) == (m == model.end()));
    switch (rng() % 4) {
      case 0:
        if (m == model.end()) {
          auto it = index.insert(key);
          CHECK(it->key() == key);
          it->record.size_bytes = step;
          model[key] = step;
        }
        break;
      case 1: {
        // A put's search then insert; another key may come or go between
        // them, and the insert must not trust the stale position.
        ObjectIndex::Position where;
        REQUIRE((index.find(key, &where) == index.end()) == (m == model.end()));
        if (m != model.end()) break;
        const std::string other = RandomKey(rng);
        if (other != key && rng() % 2 == 0) {
          if (auto o = model.find(other); o != model.end()) {
            index.erase(index.find(other));
            model.erase(o);
          } else {
            index.insert(other)->record.size_bytes = step;
            model[other] = step;
          }
        }
        auto it = index.insert(key, &where);
        CHECK(it->key() == key);
        it->record.size_bytes = step;
        model[key] = step;
        break;
      }
      case 2:
        if (m != model.end()) {
          index.erase(found);
          model.erase(m);
        }
        break;
      default: {
        auto lb = index.lower_bound(key);
        auto mlb = model.lower_bound(key);
        REQUIRE((lb == index.end()) == (mlb == model.end()));
        if (mlb != model.end()) CHECK(lb->key() == mlb->first);
        auto ub = index.upper_bound(key);
        auto mub = model.upper_bound(key);
        REQUIRE((ub == index.end()) == (mub == model.end()));
        if (mub != model.end()) CHECK(ub->key() == mub->first);
      }
    }
    if (step % 997 == 0) CheckSame(index, model);
  }
  CheckSame(index, model);
}

TEST_CASE("keys inserted in increasing order, then erased, leave a consistent index") {
  std::mt19937_64 rng(TestSeed("object index append"));
  ObjectIndex index;
  std::map<std::string, uint64_t> model;
  for (uint64_t i = 0; i < 5000; ++i) {
    char key[32];
    std::snprintf(key, sizeof key, "key-%08llu", static_cast<unsigned long long>(i));
    index.insert(key)->record.size_bytes = i;
    model[key] = i;
  }
  CheckSame(index, model);
  // Erase at random, including the last key (the append path's tail), and
  // append again after each.
  for (int round = 0; round < 2000; ++round) {
    auto m = model.begin();
    std::advance(m, rng() % model.size());
    if (round % 5 == 0) m = std::prev(model.end());
    index.erase(index.find(m->first));
    model.erase(m);
    const std::string key = "key-9" + std::to_string(round + 10000);
    index.insert(key)->record.size_bytes = round;
    model[key] = round;
  }
  CheckSame(index, model);
  // Erasing through iterators while walking (RemoveAll's pattern).
  for (auto it = index.begin(); it != index.end();) {
    auto next = it;
    ++next;
    if (it->record.size_bytes % 2 == 0) {
      model.erase(std::string(it->key()));
      index.erase(it);
    }
    it = next;
  }
  CheckSame(index, model);
  index.clear();
  model.clear();
  CheckSame(index, model);
  index.insert("again");
  model["again"] = 0;
  CheckSame(index, model);
}

TEST_CASE("an index built from nodes in any order matches the model, and refuses a key twice") {
  std::mt19937_64 rng(TestSeed("object index build"));
  for (int round = 0; round < 50; ++round) {
    std::map<std::string, uint64_t> model;
    ObjectIndex index;
    std::vector<ObjectIndex::Node*> nodes;
    // Keys share a long prefix (as a bench's or an engine's do), some are
    // prefixes of others, some differ only past the first 8 bytes after it.
    // Every third round mixes engines' prefixes that share a start and tie
    // for many bytes after it, in groups of thousands.
    const std::string prefix = round % 3 == 1 ? "model/0000000123/block-" : "";
    const char* groups[] = {"vllm@llama-3-8b@tp0@", "vllm@llama-3-70b@tp1@",
                            "vllm@llama-3-8b@tp0@0000000000000000", "vllm@llama-3-8b@tp0"};
    const size_t n = round % 3 == 2 ? rng() % 3000 : rng() % 300;
    for (size_t i = 0; i < n; ++i) {
      std::string key = (round % 3 == 2 ? std::string(groups[rng() % 4]) : prefix) + RandomKey(rng);
      if (rng() % 3 == 0) key += "0123456789" + RandomKey(rng);
      if (model.count(key)) continue;
      model[key] = i;
      nodes.push_back(index.NewNode(key));
      nodes.back()->record.size_bytes = i;
    }
    std::string duplicate;
    REQUIRE(index.Build(HandlesOf(index, nodes, round % 2 ? &rng : nullptr), &duplicate));
    CheckSame(index, model);
    // Still a working index: inserts and erases go on from there.
    if (!model.empty()) {
      index.erase(index.find(model.begin()->first));
      model.erase(model.begin());
    }
    index.insert(prefix + "~")->record.size_bytes = 7;
    model[prefix + "~"] = 7;
    CheckSame(index, model);
  }
  ObjectIndex index;
  std::vector<ObjectIndex::Node*> twice = {index.NewNode("b"), index.NewNode("a"),
                                           index.NewNode("b")};
  std::string duplicate;
  CHECK(!index.Build(HandlesOf(index, twice), &duplicate));
  CHECK(duplicate == "b");
  CHECK(index.empty());
  // A duplicate among long keys that tie for many words.
  const std::string shared = "tenant/" + std::string(40, 'x');
  std::vector<ObjectIndex::Node*> long_twice = {
      index.NewNode(shared + "1"), index.NewNode(shared), index.NewNode(shared + "2"),
      index.NewNode(shared + "1")};
  CHECK(!index.Build(HandlesOf(index, long_twice), &duplicate));
  CHECK(duplicate == shared + "1");
  CHECK(index.empty());
}

TEST_CASE("a build large enough for two threads joins its halves into one index") {
  // Past kParallelSortMinElements Build reads the nodes and links them in
  // two halves at once: the halves' common prefixes differ (the second
  // half's is shorter), the seam falls between arbitrary keys, and the
  // levels and fingers of both halves must end up in one index.
  std::mt19937_64 rng(TestSeed("object index two-thread build"));
  const size_t n = kParallelSortMinElements + 4096 + rng() % 4096;
  ObjectIndex index;
  std::vector<ObjectIndex::Node*> nodes;
  std::vector<std::string> keys;
  nodes.reserve(n);
  keys.reserve(n);
  char hex[17];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(rng()));
    std::string key = (i % 7 != 0 ? "tenant-a/model/" : "tenant-b/") + std::string(hex);
    if (i % 5 == 0) key += "/" + std::to_string(i);
    keys.push_back(key);
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  REQUIRE(keys.size() >= kParallelSortMinElements);
  // Node order: every tenant-b key in the second half, each part shuffled.
  std::vector<std::string> shuffled = keys;
  std::stable_partition(shuffled.begin(), shuffled.end(),
                        [](const std::string& k) { return k[7] == 'a'; });
  auto b_keys = std::find_if(shuffled.begin(), shuffled.end(), [](const std::string& k) { return k[7] == 'b'; });
  REQUIRE(b_keys - shuffled.begin() > static_cast<ptrdiff_t>(shuffled.size() / 2));
  std::shuffle(shuffled.begin(), b_keys, rng);
  std::shuffle(b_keys, shuffled.end(), rng);
  for (const std::string& k : shuffled) nodes.push_back(index.NewNode(k));
  std::string duplicate;
  // Free slots' 0s among the handles, more of them in the first half, so
  // the halves of the handles hold unequal numbers of nodes.
  REQUIRE(index.Build(HandlesOf(index, nodes, &rng), &duplicate));
  REQUIRE(index.CheckInvariants().ok());
  REQUIRE(index.size() == keys.size());
  size_t at = 0;
  bool in_order = true;
  for (auto it = index.begin(); it != index.end() && at < keys.size(); ++it, ++at)
    in_order = in_order && it->key() == keys[at];
  CHECK(in_order);
  CHECK(at == keys.size());
  for (int probe = 0; probe < 2000; ++probe) {
    const std::string& k = keys[rng() % keys.size()];
    REQUIRE(index.find(k) != index.end());
    CHECK(index.find(k)->key() == k);
    CHECK(index.find(k + "\x01") == index.end());
  }
  // Changes around the seam and at both ends keep the index whole.
  const std::string middle = keys[keys.size() / 2];
  index.erase(index.find(middle));
  index.erase(index.find(keys.front()));
  index.insert(middle + "-again");
  index.insert(std::string(1, '\x7f'));
  CHECK(index.CheckInvariants().ok());
  CHECK(index.size() == keys.size());
  CHECK(index.lower_bound(middle)->key() == middle + "-again");
  // A key twice, one in each half, is found and refused.
  ObjectIndex twice;
  std::vector<ObjectIndex::Node*> dup;
  for (size_t i = 0; i < kParallelSortMinElements + 10; ++i) dup.push_back(twice.NewNode("k" + std::to_string(i)));
  dup.push_back(twice.NewNode("k5"));
  CHECK(!twice.Build(HandlesOf(twice, dup), &duplicate));
  CHECK(duplicate == "k5");
  CHECK(twice.empty());
}

TEST_CASE("nodes of every size are reused after erase, and their handles find them") {
  std::mt19937_64 rng(TestSeed("object index sizes"));
  ObjectIndex index;
  std::map<std::string, uint64_t> model;
  for (int step = 0; step < 20000; ++step) {
    // Lengths from 1 to 1000 bytes, over several chunks (CheckSame checks
    // every node's handle).
    if (step % 5000 == 4999) CheckSame(index, model);
    std::string key = std::to_string(rng() % 500) + std::string(rng() % 1000, 'x');
    if (auto m = model.find(key); m != model.end()) {
      index.erase(index.find(key));
      model.erase(m);
    } else {
      auto it = index.insert(key);
      it->record.size_bytes = step;
      it->record.SetBuffers(std::vector<uint64_t>(1 + step % 3, 64).data(), 1 + step % 3);
      model[key] = step;
    }
  }
  CheckSame(index, model);
}

// Free 2 MiB pages in the hugetlb pool, from /proc/meminfo (0 if unknown).
long FreeHugePages() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (line.rfind("HugePages_Free:", 0) == 0) return std::stol(line.substr(15));
  }
  return 0;
}

TEST_CASE("an index asked for huge pages matches the model whether the pool has pages or not") {
  const long free_pages = FreeHugePages();
  std::mt19937_64 rng(TestSeed("object index huge pages"));
  ObjectIndex index(/*huge_pages=*/true);
  std::map<std::string, uint64_t> model;
  // About 60k nodes of ~100 bytes: three chunks.
  for (int step = 0; step < 60000; ++step) {
    std::string key = "k" + std::to_string(rng() % 100000) + std::string(40, 'x');
    if (model.count(key) == 0) {
      index.insert(key)->record.size_bytes = step;
      model[key] = step;
    }
  }
  CheckSame(index, model);
  // The pool is the machine's: the chunks come from it only if it had
  // pages (and another process did not take them first).
  MESSAGE("hugetlb pages free at start: " << free_pages << "; chunks on them: "
                                           << index.huge_chunks());
  if (free_pages == 0) CHECK(index.huge_chunks() == 0);
  CHECK(index.huge_chunks() * ObjectIndex::kChunkBytes <= index.memory_bytes() + ObjectIndex::kChunkBytes);
}

TEST_CASE("node levels follow the key: about 3 in 4 keys have one level") {
  size_t one = 0;
  for (int i = 0; i < 40000; ++i) {
    const std::string key = "k" + std::to_string(i);
    const uint32_t levels = ObjectIndex::LevelsOf(key);
    CHECK(levels >= 1);
    CHECK(levels <= ObjectIndex::kMaxLevels);
    CHECK(levels == ObjectIndex::LevelsOf(key));
    if (levels == 1) ++one;
  }
  CHECK(one > 28000);  // 30000 expected; 28000 is over 20 standard deviations off
  CHECK(one < 32000);
}

TEST_CASE("keys past the length the record's bits hold keep their length in the node") {
  ObjectIndex index;
  std::map<std::string, uint64_t> model;
  const size_t long_key = ObjectIndex::kLongKeyBytes;
  // Both sides of the long-key threshold, and the longest key a master takes.
  for (size_t length : {size_t{1}, size_t{40}, long_key - 1, long_key, long_key + 1,
                        size_t{4096}, size_t{64} << 10}) {
    for (char c : {'a', 'b'}) {
      std::string key(length, c);
      auto it = index.insert(key);
      CHECK(it->key() == key);
      CHECK(it->levels() == ObjectIndex::LevelsOf(key));
      it->record.size_bytes = length;
      model[key] = length;
    }
  }
  CheckSame(index, model);
  for (auto m = model.begin(); m != model.end();) {
    index.erase(index.find(m->first));
    m = model.erase(m);
    CheckSame(index, model);
    if (m == model.end()) break;
    ++m;  // erase every other key, the rest stay
  }
  CHECK(index.size() == model.size());
}

TEST_CASE("a node is its record, its links and its key: no header of its own") {
  ObjectIndex index;
  auto it = index.insert(std::string(40, 'k'));
  const char* at = reinterpret_cast<const char*>(it.node());
  CHECK(it->key().data() ==
        at + sizeof(ObjectRecord) + it->levels() * sizeof(ObjectIndex::Node*));
  CHECK(sizeof(ObjectIndex::Node) == 40);
}

TEST_CASE("searches that start from the fingers find what a std::map finds") {
  std::mt19937_64 rng(TestSeed("object index fingers"));
  ObjectIndex index;
  std::map<std::string, uint64_t> model;
  // Enough keys for several fingers (1 node in 1024); half share a 12-byte
  // prefix, so fingers tie on their first 8 bytes and compare whole keys.
  auto random_key = [&] {
    std::string key = rng() % 2 ? "shared/prefix" : "";
    for (int i = 0; i < 6; ++i) key.push_back("\0az"[rng() % 3]);
    return key + std::to_string(rng() % 100000);
  };
  for (int step = 0; step < 60000; ++step) {
    const std::string key = random_key();
    auto m = model.find(key);
    ObjectIndex::Position where;
    REQUIRE((index.find(key, &where) == index.end()) == (m == model.end()));
    if (m == model.end()) {
      index.insert(key, &where)->record.size_bytes = step;
      model[key] = step;
    } else if (rng() % 3 == 0) {
      index.erase(index.find(key));
      model.erase(m);
    }
    if (step % 20000 == 19999) CheckSame(index, model);
  }
  for (int probe = 0; probe < 2000; ++probe) {
    const std::string key = random_key();
    auto lb = index.lower_bound(key);
    auto mlb = model.lower_bound(key);
    REQUIRE((lb == index.end()) == (mlb == model.end()));
    if (mlb != model.end()) CHECK(lb->key() == mlb->first);
  }
  CheckSame(index, model);
}

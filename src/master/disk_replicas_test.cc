#include "master/disk_replicas.h"

#include <doctest/doctest.h>

#include <random>
#include <set>

#include "common/test_seed.h"
#include "msg/tier_messages.h"

namespace mc::master {

TEST_CASE("a disk replica is readable only while its store is attached") {
  DiskReplicas d;
  d.Attach("host:/ssd", "h:1", {1, 2}, 1000);
  d.Add("a", "host:/ssd", 100);
  REQUIRE(d.ReadableDisk("a") != nullptr);
  CHECK(d.ReadableDisk("a")->segment_name == "h:1");
  d.DetachSegment("h:1");
  CHECK(d.ReadableDisk("a") == nullptr);
  CHECK(d.Find("a") != nullptr);
  d.Attach("host:/ssd", "h:2", {1, 3}, 1000);
  CHECK(d.ReadableDisk("a")->segment_name == "h:2");
  CHECK(d.DiskOfSegment("h:2") == std::optional<std::string>("host:/ssd"));
}

TEST_CASE("a full disk drops its least recently used entries, never the new one") {
  constexpr uint64_t kB = 4096;
  CHECK(DiskReplicas::FileBytes("a", 100) == 2 * kB);  // header block, data block
  CHECK(DiskReplicas::FileBytes("a", kB + 1) == 3 * kB);
  DiskReplicas d;
  d.Attach("x", "s", {}, 6 * kB);
  CHECK(d.Add("a", "x", 100).empty());
  CHECK(d.Add("b", "x", 100).empty());
  CHECK(d.Add("c", "x", 100).empty());
  d.Touch("a");  // b is now the oldest
  CHECK(d.Add("e", "x", 2 * kB) == std::vector<std::string>{"b", "c"});
  CHECK(d.Find("a") != nullptr);
  CHECK(d.Find("e") != nullptr);
  CHECK(d.FindDisk("x")->used_bytes == 5 * kB);
  CHECK(d.bytes() == 5 * kB);
  CHECK(d.objects() == 2);
  CHECK(d.MakeRoom("x", 2 * kB) == std::vector<std::string>{"a"});
}

TEST_CASE("adding a key again replaces its entry and its bytes") {
  DiskReplicas d;
  d.Attach("x", "s", {}, 1000);
  d.Add("a", "x", 100);
  d.Add("a", "x", 5000);
  CHECK(d.bytes() == DiskReplicas::FileBytes("a", 5000));
  CHECK(d.FindDisk("x")->objects == 1);
  CHECK(d.Remove("a"));
  CHECK_FALSE(d.Remove("a"));
  CHECK(d.bytes() == 0);
}

TEST_CASE("entries a restarted store did not announce are forgotten") {
  DiskReplicas d;
  d.Add("a", "x", 10);
  d.Add("b", "x", 10);
  d.Add("c", "y", 10);
  CHECK(d.ForgetUnannounced("x", {"a"}) == std::vector<std::string>{"b"});
  CHECK(d.Find("a") != nullptr);
  CHECK(d.Find("b") == nullptr);
  CHECK(d.Find("c") != nullptr);
}

TEST_CASE("promotion admits a key read from disk twice within the window") {
  PromotionGate gate(1000);
  CHECK_FALSE(gate.Hit("k", 0));
  CHECK_FALSE(gate.Hit("j", 10));
  CHECK(gate.Hit("k", 900));
  CHECK_FALSE(gate.Hit("k", 950));  // admitted: counting starts again
  CHECK_FALSE(gate.Hit("j", 5000));  // too late: a first hit again
  CHECK(gate.Hit("j", 5500));
  PromotionGate third(1000, 3);  // --promotion-admission-threshold 3
  CHECK_FALSE(third.Hit("k", 0));
  CHECK_FALSE(third.Hit("k", 500));
  CHECK(third.Hit("k", 900));
  CHECK_FALSE(third.Hit("j", 0));
  CHECK_FALSE(third.Hit("j", 600));
  CHECK_FALSE(third.Hit("j", 1200));  // past the window of the first: counts from here
  CHECK_FALSE(third.Hit("j", 1500));
  CHECK(third.Hit("j", 2100));
  PromotionGate every(1000, 1);  // 1: every read from disk promotes
  CHECK(every.Hit("k", 0));
  CHECK(every.Hit("k", 10));
}


namespace {
// MasterState::ListKeys's paging over a set of memory keys (its model).
msg::ListKeysReply MemoryPage(const std::set<std::string>& keys, const msg::ListKeysRequest& req,
                              uint32_t limit) {
  msg::ListKeysReply r;
  auto it = req.cursor.empty() || req.cursor < req.prefix ? keys.lower_bound(req.prefix)
                                                          : keys.upper_bound(req.cursor);
  for (; it != keys.end() && it->compare(0, req.prefix.size(), req.prefix) == 0; ++it) {
    if (r.keys.size() == limit) {
      r.next_cursor = r.keys.back().key;
      break;
    }
    r.keys.push_back(msg::KeyInfo{*it, 1, 1, false});
  }
  return r;
}
}  // namespace

TEST_CASE("listing pages through memory and disk keys, each once, in order, with its tier") {
  const uint64_t seed = TestSeed("disk replicas listing");
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 200; ++round) {
    CAPTURE(round);
    std::set<std::string> memory, disk;
    DiskReplicas d;
    d.Attach("x", "s", {}, 0);  // no capacity: nothing dropped
    const int n = static_cast<int>(rng() % 30);
    for (int i = 0; i < n; ++i) {
      const std::string key = std::string(1, "ab"[rng() % 2]) + std::to_string(rng() % 20);
      if (rng() % 3 != 0) memory.insert(key);
      if (rng() % 3 != 1) {
        disk.insert(key);
        d.Add(key, "x", 10);
      }
    }
    msg::ListKeysRequest req;
    req.prefix = round % 2 == 0 ? "" : "a";
    const uint32_t limit = 1 + static_cast<uint32_t>(rng() % 5);
    std::vector<std::string> got;
    std::vector<uint8_t> tiers, page_tiers;
    for (int pages = 0; pages < 100; ++pages) {
      msg::ListKeysReply page = d.MergeKeys(MemoryPage(memory, req, limit), req, limit, &page_tiers);
      CHECK(page.keys.size() <= limit);
      REQUIRE(page_tiers.size() == page.keys.size());
      for (size_t i = 0; i < page.keys.size(); ++i) {
        got.push_back(page.keys[i].key);
        tiers.push_back(page_tiers[i]);
        CHECK(page.keys[i].replicas == (memory.contains(page.keys[i].key) ? 1u : 0u));
      }
      if (page.next_cursor.empty()) break;
      req.cursor = page.next_cursor;
    }
    std::set<std::string> all;
    for (const auto& k : memory) if (k.starts_with(req.prefix)) all.insert(k);
    for (const auto& k : disk) if (k.starts_with(req.prefix)) all.insert(k);
    CHECK(got == std::vector<std::string>(all.begin(), all.end()));
    for (size_t i = 0; i < got.size() && i < tiers.size(); ++i) {
      const bool in_m = memory.contains(got[i]), in_d = disk.contains(got[i]);
      const msg::KeyTier want = in_m && in_d ? msg::KeyTier::kBoth
                                : in_m       ? msg::KeyTier::kMemory
                                             : msg::KeyTier::kDisk;
      CHECK(tiers[i] == static_cast<uint8_t>(want));
    }
  }
}

}  // namespace mc::master

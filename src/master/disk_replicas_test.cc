#include "master/disk_replicas.h"

#include <doctest/doctest.h>

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
}

}  // namespace mc::master

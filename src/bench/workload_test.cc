// The workload runner and live trace replay against in-memory targets: ops
// mode runs exactly the asked number of keys, reads find what puts wrote,
// names wrap on overwriting targets, and a live replay's hit ratio equals
// exact LRU's when nothing is evicted.
#include <doctest/doctest.h>

#include <map>
#include <mutex>
#include <set>

#include "bench/live_trace.h"
#include "bench/workload.h"

using namespace mc::bench;

namespace {

// A Target over one std::set shared by the threads (mutex-guarded);
// immutable keys like mooncake's.
struct Store {
  std::mutex mu;
  std::set<std::string> keys;
};

class MemoryTarget final : public Target {
 public:
  explicit MemoryTarget(Store& s) : s_(s) {}
  BatchOutcome Put(std::span<const std::string> keys, std::span<const uint8_t> value) override {
    std::lock_guard lock(s_.mu);
    BatchOutcome out;
    for (const auto& k : keys) {
      if (s_.keys.insert(k).second) out.AddOk(value.size());
      else out.AddMissing();
    }
    return out;
  }
  BatchOutcome Get(std::span<const std::string> keys, uint64_t size) override { return Look(keys, size); }
  BatchOutcome Exists(std::span<const std::string> keys) override { return Look(keys, 0); }

 private:
  BatchOutcome Look(std::span<const std::string> keys, uint64_t size) {
    std::lock_guard lock(s_.mu);
    BatchOutcome out;
    for (const auto& k : keys) {
      if (s_.keys.count(k)) out.AddOk(size);
      else out.AddMissing();
    }
    return out;
  }
  Store& s_;
};

TargetFactory MemoryFactory(Store& s) {
  return [&s]() -> mc::Result<std::unique_ptr<Target>> { return std::unique_ptr<Target>(new MemoryTarget(s)); };
}

}  // namespace

TEST_CASE("ops mode runs exactly the asked keys, and gets find every put key") {
  Store store;
  WorkloadOptions o;
  o.value_size = 100;
  o.threads = 3;
  o.batch = 7;
  o.ops = 1000;
  o.keys = 1000;
  KeySpace keys("k-", o.keys, false);
  auto put = RunWorkload(MemoryFactory(store), "mooncake", Op::kPut, o, keys);
  REQUIRE(put.ok());
  CHECK(put->ops == 1000);
  CHECK(put->hits == 1000);
  CHECK(put->bytes == 100000);
  CHECK(store.keys.size() == 1000);
  CHECK(put->latency.count() == put->batches);
  o.zipf = true;
  auto get = RunWorkload(MemoryFactory(store), "mooncake", Op::kGet, o, keys);
  REQUIRE(get.ok());
  CHECK(get->ops == 1000);
  CHECK(get->hits == 1000);
  CHECK(get->errors == 0);
}

TEST_CASE("names wrap at the key count on an overwriting target, not otherwise") {
  KeySpace wraps("p", 10, true), grows("p", 10, false);
  std::string a, b;
  wraps.Name(13, &a);
  grows.Name(13, &b);
  CHECK(a == "p3");
  CHECK(b == "p13");
}

TEST_CASE("hashed names are distinct, scattered, and wrap like counter names") {
  KeySpace hashed("p", 10, false, true), wraps("p", 10, true, true);
  std::set<std::string> names;
  std::string name, previous;
  size_t adjacent = 0;  // successive names that share their first digit
  for (uint64_t i = 0; i < 10000; ++i) {
    hashed.Name(i, &name);
    CHECK(name.size() == 17);
    if (!previous.empty() && name[1] == previous[1]) ++adjacent;
    names.insert(name);
    previous = name;
  }
  CHECK(names.size() == 10000);
  CHECK(adjacent < 1000);  // about 1 in 16 by chance; counter names: nearly all
  std::string a, b;
  wraps.Name(13, &a);
  wraps.Name(3, &b);
  CHECK(a == b);
  hashed.Name(13, &b);
  CHECK(a != b);
}

TEST_CASE("padded names have the asked length and stay distinct, numbers that do not fit stay whole") {
  KeySpace counter("bench-", 1000, false, false, 40), hashed("bench-h-", 1000, false, true, 40);
  std::set<std::string> names;
  std::string name;
  for (uint64_t i = 0; i < 1000; ++i) {
    counter.Name(i, &name);
    CHECK(name.size() == 40);
    names.insert(name);
    hashed.Name(i, &name);
    CHECK(name.size() == 40);
    names.insert(name);
  }
  CHECK(names.size() == 2000);
  counter.Name(7, &name);
  CHECK(name == "bench-" + std::string(33, '0') + "7");
  KeySpace short_pad("p", 10, false, false, 3);
  short_pad.Name(123456, &name);
  CHECK(name == "p123456");
}

TEST_CASE("ops lists parse in order; unknown names are refused") {
  auto ops = ParseOps("put,get,exists,mixed");
  REQUIRE(ops.ok());
  CHECK(*ops == std::vector<Op>{Op::kPut, Op::kGet, Op::kExists, Op::kMixed});
  CHECK_FALSE(ParseOps("put,delete").ok());
  CHECK_FALSE(ParseOps("").ok());
}

TEST_CASE("a live replay with room for everything hits what exact LRU hits") {
  auto trace = ParseTrace(
      "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}\n"
      "{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1, 2, 3, 4]}\n"
      "{\"timestamp\": 2, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1, 5]}\n",
      "t");
  REQUIRE(trace.ok());
  Store store;
  LiveTraceOptions o;
  o.block_size = 10;
  o.capacity_blocks = 100;
  o.key_prefix = "b";
  auto r = ReplayLive(*trace, MemoryFactory(store), "mooncake", o);
  REQUIRE(r.ok());
  CHECK(r->summary.hit_blocks == 4);  // 3 of the second request, 1 of the third
  CHECK(r->summary.blocks == 9);
  CHECK(r->summary.stored_blocks == 5);
  CHECK(r->summary.hit_ratio == doctest::Approx(4.0 / 9));
  CHECK(r->summary.lru_hit_ratio == doctest::Approx(r->summary.hit_ratio));
  CHECK(r->summary.bytes_moved == 90);  // 5 stored + 4 loaded blocks of 10 bytes
  CHECK(store.keys.count("b4") == 1);
}

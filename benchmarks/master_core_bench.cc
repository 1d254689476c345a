// master_core_bench: memory and speed of the master state machine alone.
//
//   master_core_bench [objects=1000000] [policy=adaptive|lru|exact-lru|none] [batch=128]
//
// Mounts 8 segments, inserts `objects` small objects (4 KiB, 1 replica) with
// PutStart+PutEnd one at a time, reports the RSS growth per object, then
// times GetReplicaList; then repeats both with batches on a fresh state.
// Keys look like an inference engine's ("model/0000000123/block-hash"),
// 27 bytes. The policy "none" tracks nothing, isolating the index's memory.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "eviction/testing_policy.h"
#include "master/master_state.h"

using namespace mc;
using namespace mc::master;

namespace {

class NoPolicy final : public EvictionPolicy {
 public:
  void OnInsert(ObjectId, uint64_t, uint64_t) override {}
  void OnAccess(ObjectId) override {}
  void OnRemove(ObjectId) override {}
  std::optional<ObjectId> NextVictim(const std::function<bool(ObjectId)>&) override {
    return std::nullopt;
  }
  std::string_view name() const override { return "none"; }
  size_t tracked() const override { return 0; }
};

uint64_t RssBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

std::string Key(uint64_t i) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model/%010llu/block-hash", static_cast<unsigned long long>(i));
  return buf;
}

std::unique_ptr<MasterState> Fresh(const Options& cfg, const std::string& policy) {
  std::unique_ptr<EvictionPolicy> p;
  if (policy == "none") p = std::make_unique<NoPolicy>();
  else if (policy == "exact-lru") p = std::make_unique<ExactLruPolicy>();
  else p = MakeEvictionPolicy(policy, 0, IdSpace::kSlotted);  // the production policies
  if (!p) {
    std::fprintf(stderr, "master_core_bench: unknown policy %s\n", policy.c_str());
    std::exit(2);
  }
  auto st = std::make_unique<MasterState>(cfg, std::move(p));
  for (int s = 0; s < 8; ++s) {
    msg::SegmentDesc d{"seg" + std::to_string(s), "host", "10.0.0.1:" + std::to_string(s), "",
                         64ull << 30, 1};
    if (!st->MountSegment({msg::ClientId{1, 1}, d}, 1).ok()) std::abort();
  }
  return st;
}

constexpr uint64_t kObjectBytes = 4096;

}  // namespace

int main(int argc, char** argv) {
  const uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  const std::string policy = argc > 2 ? argv[2] : "exact-lru";
  const uint32_t batch = argc > 3 ? static_cast<uint32_t>(std::atoi(argv[3])) : 128;
  Options cfg;
  cfg.max_batch = std::max(cfg.max_batch, batch);
  const msg::ClientId client{1, 1};
  std::printf("master_core_bench: %llu objects of %llu B, 1 replica, key %zu B, policy %s, "
              "8 segments of 64 GiB, batch %u\n",
              (unsigned long long)n, (unsigned long long)kObjectBytes, Key(0).size(),
              policy.c_str(), batch);

  // Single operations.
  {
    const uint64_t rss0 = RssBytes();
    auto st = Fresh(cfg, policy);
    uint64_t now = 1;
    auto t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < n; ++i) {
      const std::string k = Key(i);
      if (!st->PutStart({client, k, kObjectBytes, {}}, now).ok()) std::abort();
      if (!st->PutEnd({client, k}, now).ok()) std::abort();
    }
    const double put_s = Seconds(t0);
    const uint64_t rss1 = RssBytes();
    t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < n; ++i)
      if (!st->GetReplicaList({client, Key((i * 7919) % n)}, now).ok()) std::abort();
    const double get_s = Seconds(t0);
    std::printf("memory: %.1f B/object (RSS +%.1f MiB for %llu objects)\n",
                double(rss1 - rss0) / double(n), double(rss1 - rss0) / (1 << 20),
                (unsigned long long)n);
    std::printf("single: PutStart+PutEnd %.0f objects/s, GetReplicaList %.0f ops/s\n",
                double(n) / put_s, double(n) / get_s);
  }

  // Batches.
  {
    auto st = Fresh(cfg, policy);
    uint64_t now = 1;
    std::vector<msg::PutStartRequest> starts;
    std::vector<msg::KeyRequest> keys;
    auto t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < n; i += batch) {
      starts.clear();
      keys.clear();
      for (uint64_t j = i; j < std::min(n, i + batch); ++j) {
        starts.push_back({client, Key(j), kObjectBytes, {}});
        keys.push_back({client, Key(j)});
      }
      if (!st->BatchPutStart(starts, now).ok() || !st->BatchPutEnd(keys, now).ok()) std::abort();
    }
    const double put_s = Seconds(t0);
    t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < n; i += batch) {
      keys.clear();
      for (uint64_t j = i; j < std::min(n, i + batch); ++j)
        keys.push_back({client, Key((j * 7919) % n)});
      if (!st->BatchGetReplicaList(keys, now).ok()) std::abort();
    }
    const double get_s = Seconds(t0);
    std::printf("batch:  PutStart+PutEnd %.0f objects/s, GetReplicaList %.0f keys/s\n",
                double(n) / put_s, double(n) / get_s);
  }
  return 0;
}

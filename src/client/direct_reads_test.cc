// Direct reads (client/direct_reads.h) against the master core in process
// and real segments read and written over shared memory (their write epochs
// are what a sealed read checks): repeated gets skip the master, their hits
// reach it, and under racing removals, upserts, evictions and re-puts no get
// returns bytes of another key or version.
#include "client/direct_reads.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "client/master_link.h"
#include "common/byte_io.h"
#include "common/clock.h"
#include "common/host_identity.h"
#include "common/test_count.h"
#include "common/test_seed.h"
#include "eviction/testing_policy.h"
#include "master/master_state.h"
#include "transfer/segment.h"
#include "transfer/shm_transport.h"

namespace mc::client {
namespace {

const msg::ClientId kStoreOwner{9, 9};

struct Master {
  Master(const Clock& c, master::Options o)
      : clock(c), state(o, std::make_unique<master::ExactLruPolicy>()) {}
  const Clock& clock;
  std::mutex mu;
  master::MasterState state;
  std::atomic<uint64_t> lookups{0};   // keys asked for by GetReplicaList
  std::atomic<uint64_t> reported{0};  // keys counted by ReportAccesses
};

// The master core as masterd serves it, with a sealed-read grant on every
// read buffer (a signature the shm path does not verify: it holds no key).
class Link final : public MasterLink {
  template <typename F>
  auto Locked(F&& f) {
    std::lock_guard<std::mutex> lock(m_->mu);
    return f(m_->clock.NowUs());
  }
  static void Grant(msg::GetReplicaListReply& r) {
    for (auto& rep : r.replicas) {
      for (auto& b : rep.buffers) {
        b.sealed_capability.assign(32, 'g');
        b.sealed_capability_expiry_unix_ms = UINT64_MAX / 2;
      }
    }
  }

 public:
  explicit Link(std::shared_ptr<Master> m) : m_(std::move(m)) {}
  Result<msg::PutStartReply> PutStart(const msg::PutStartRequest& q) override {
    return Locked([&](uint64_t now) { return m_->state.PutStart(q, now); });
  }
  Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> BatchPutStart(
      const msg::Batch<msg::PutStartRequest>& q) override {
    return Locked([&](uint64_t now) { return m_->state.BatchPutStart(q, now); });
  }
  Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> BatchPutStartEx(
      const msg::Batch<msg::PutStartExRequest>& q) override {
    msg::Batch<msg::PutStartRequest> plain;
    for (const auto& r : q) plain.push_back(r.start);
    return BatchPutStart(plain);
  }
  Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> BatchUpsertStart(
      const msg::Batch<msg::PutStartExRequest>& q) override {
    msg::Batch<msg::PutStartRequest> plain;
    for (const auto& r : q) plain.push_back(r.start);
    return Locked([&](uint64_t now) { return m_->state.BatchUpsertStart(plain, now); });
  }
  Status PutEnd(const msg::KeyRequest& q) override {
    return Locked([&](uint64_t now) { return m_->state.PutEnd(q, now); });
  }
  Result<msg::Batch<Status>> BatchPutEnd(const msg::Batch<msg::KeyRequest>& q) override {
    return Locked([&](uint64_t now) { return m_->state.BatchPutEnd(q, now); });
  }
  Result<msg::Batch<Status>> BatchPutRevoke(const msg::Batch<msg::KeyRequest>& q) override {
    return Locked([&](uint64_t now) { return m_->state.BatchPutRevoke(q, now); });
  }
  Result<msg::GetReplicaListReply> GetReplicaList(const msg::KeyRequest& q) override {
    m_->lookups.fetch_add(1);
    auto r = Locked([&](uint64_t now) { return m_->state.GetReplicaList(q, now); });
    if (r.ok()) Grant(*r);
    return r;
  }
  Result<msg::Batch<msg::BatchItem<msg::GetReplicaListReply>>> BatchGetReplicaList(
      const msg::Batch<msg::KeyRequest>& q) override {
    m_->lookups.fetch_add(q.size());
    auto r = Locked([&](uint64_t now) { return m_->state.BatchGetReplicaList(q, now); });
    if (r.ok()) {
      for (auto& item : *r) Grant(item.value);
    }
    return r;
  }
  void ReleaseLeasesSoon(const msg::Batch<msg::KeyRequest>& q) override {
    Locked([&](uint64_t now) {
      m_->state.ReleaseLeases(q, now);
      return 0;
    });
  }
  Result<bool> ExistKey(const msg::KeyRequest& q) override {
    return Locked([&](uint64_t now) { return m_->state.ExistKey(q, now); });
  }
  Result<msg::Batch<msg::BatchItem<bool>>> BatchExistKey(
      const msg::Batch<msg::KeyRequest>& q) override {
    return Locked([&](uint64_t now) { return m_->state.BatchExistKey(q, now); });
  }
  Status Remove(const msg::RemoveRequest& q) override {
    return Locked([&](uint64_t now) { return m_->state.Remove(q, now); });
  }
  Result<msg::Batch<Status>> BatchRemove(const msg::Batch<msg::RemoveRequest>& q) override {
    msg::Batch<Status> out;
    for (const auto& r : q) out.push_back(Remove(r));
    return out;
  }
  Result<msg::RemoveAllReply> RemoveAll(bool force) override {
    return Locked([&](uint64_t now) { return m_->state.RemoveAll(now, force); });
  }
  Result<msg::ListKeysReply> ListKeys(const msg::ListKeysRequest& q) override {
    return Locked([&](uint64_t now) { return m_->state.ListKeys(q, now); });
  }
  Result<msg::ClusterStatusReply> ClusterStatus() override {
    return Locked([&](uint64_t now) { return m_->state.ClusterStatus(now); });
  }
  Status ReportTransfers(const msg::TransferReport&) override { return Status::Ok(); }
  Status ReportAccesses(const msg::AccessReport& report) override {
    return Locked([&](uint64_t now) {
      m_->reported.fetch_add(m_->state.ReportAccesses(report, now));
      return Status::Ok();
    });
  }

 private:
  std::shared_ptr<Master> m_;
};

// Segments of this host, mapped by the clients' shm transports.
struct ShmCluster {
  ManualClock clock;
  std::shared_ptr<Master> master;
  std::vector<std::unique_ptr<transfer::Segment>> segments;

  ShmCluster(int count, uint64_t segment_bytes, master::Options o = {})
      : master(std::make_shared<Master>(clock, o)) {
    for (int i = 0; i < count; ++i) {
      transfer::SegmentOptions so;
      so.size_bytes = segment_bytes;
      so.try_huge_pages = false;
      auto seg = transfer::Segment::Create(so);
      REQUIRE(seg.ok());
      msg::SegmentDesc d;
      d.name = d.endpoint = "127.0.0.1:" + std::to_string(9100 + i);
      d.hostname = HostIdentity();
      d.shm_path = (*seg)->shm_path();
      d.size_bytes = segment_bytes;
      d.incarnation = 1;
      REQUIRE(master->state.MountSegment({kStoreOwner, d}, clock.NowUs()).ok());
      segments.push_back(std::move(*seg));
    }
  }
  std::unique_ptr<Client> NewClient(uint64_t direct_read_ttl_us = kDefaultDirectReadTtlUs) {
    Config config;
    config.cluster.direct_read_ttl_us = direct_read_ttl_us;
    return Client::Make(config, std::make_unique<Link>(master),
                        std::make_unique<transfer::ShmTransport>(), &clock);
  }
};

// A value stamped with its key and version in every 16 bytes.
std::vector<uint8_t> Stamped(uint64_t key, uint64_t version, size_t bytes) {
  std::vector<uint8_t> v(bytes);
  for (size_t i = 0; i + 16 <= bytes; i += 16) {
    StoreLe64(&v[i], key);
    StoreLe64(&v[i + 8], version);
  }
  return v;
}

// The version `v` is uniformly stamped with for `key`; 0 when it is not.
uint64_t VersionOf(const std::vector<uint8_t>& v, uint64_t key) {
  if (v.size() < 16 || v.size() % 16 != 0) return 0;
  const uint64_t version = LoadLe64(&v[8]);
  for (size_t i = 0; i < v.size(); i += 16) {
    if (LoadLe64(&v[i]) != key || LoadLe64(&v[i + 8]) != version) return 0;
  }
  return version;
}


}  // namespace

TEST_CASE("a repeated get reads straight from the store and its hits reach the master") {
  ShmCluster c(1, 1 << 20);
  auto client = c.NewClient();
  const auto v = Stamped(1, 1, 4096);
  REQUIRE(client->Put("k", v, {}).ok());
  REQUIRE(client->Get("k").value() == v);
  CHECK(c.master->lookups == 1);
  for (int i = 0; i < 5; ++i) REQUIRE(client->Get("k").value() == v);
  CHECK(c.master->lookups == 1);  // five gets, no master round trip
  c.clock.AdvanceMs(1000);        // the report interval
  REQUIRE(client->Get("k").value() == v);
  CHECK(c.master->reported == 1);
  // With direct reads off every get asks the master.
  auto plain = c.NewClient(0);
  for (int i = 0; i < 3; ++i) REQUIRE(plain->Get("k").value() == v);
  CHECK(c.master->lookups == 4);
}

TEST_CASE("a direct read of space another object took asks the master, which knows the new place") {
  ShmCluster c(1, 64 << 10);
  auto reader = c.NewClient();
  auto writer = c.NewClient();
  REQUIRE(writer->Put("a", Stamped(1, 1, 8192), {}).ok());
  REQUIRE(VersionOf(reader->Get("a").value(), 1) == 1);  // cached
  // Removed (the reader released its lease), then the space goes to other keys.
  REQUIRE(writer->Remove("a", false).ok());
  for (uint64_t k = 2; k < 9; ++k) (void)writer->Put("b" + std::to_string(k), Stamped(k, 1, 8192), {});
  REQUIRE(writer->Put("a", Stamped(1, 2, 8192), {}).ok());
  const uint64_t before = c.master->lookups;
  auto got = reader->Get("a");
  REQUIRE(got.ok());
  CHECK(VersionOf(*got, 1) == 2);
  CHECK(c.master->lookups == before + 1);  // the stale location sent it to the master
}

// Readers with their own caches race writers that re-put, upsert, remove
// (forced or not), remove everything and fill a small pool so puts evict.
TEST_CASE("racing removals, upserts, evictions and re-puts never let a get return another key or version") {
  const uint64_t seed = TestSeed("direct reads race");
  const uint64_t gets = mc::TestCount("MC_DIRECT_GETS", 3000);
  // Leases of the default TTL: the writers move the manual clock 0.5 ms an
  // op, so a lease outlives any read (a lease that ran out mid-read would let
  // the master hand its space out under an ordinary read, which no seal checks).
  ShmCluster c(2, 96 << 10);
  constexpr uint64_t kKeys = 24;
  std::mutex mu;
  std::vector<std::set<uint64_t>> written(kKeys);  // versions ever put, by key
  std::atomic<uint64_t> next_version{1};
  std::atomic<bool> stop{false};
  auto writer = [&](uint64_t s) {
    std::mt19937_64 rng(s);
    auto client = c.NewClient();
    for (uint64_t n = 0; !stop.load(); ++n) {
      const uint64_t key = rng() % kKeys;
      const std::string name = "key-" + std::to_string(key);
      const uint64_t op = rng() % 100;
      c.clock.AdvanceUs(500);
      if (n % 16 == 0) {
        std::lock_guard<std::mutex> lock(c.master->mu);
        (void)c.master->state.Tick(c.clock.NowUs());
      }
      if (op < 15) {
        (void)client->Remove(name, rng() % 2 == 0);
      } else if (op < 17) {
        (void)client->RemoveAll(true);
      } else {
        const uint64_t version = next_version.fetch_add(1);
        {
          std::lock_guard<std::mutex> lock(mu);
          written[key].insert(version);
        }
        msg::PutOptions po;
        po.upsert = op < 70;
        (void)client->Put(name, Stamped(key, version, 16 * (1 + rng() % 1024)), po);
      }
    }
  };
  std::thread w1(writer, seed), w2(writer, seed + 1);
  std::mt19937_64 rng(seed + 2);
  std::vector<std::unique_ptr<Client>> readers;
  for (int i = 0; i < 3; ++i) readers.push_back(c.NewClient());
  uint64_t requested = 0, served = 0, wrong = 0;
  // On a loaded machine the writers may not have run yet: read only once
  // there is something to read, and keep reading (up to a bound on the
  // iterations, not on time) until enough gets were served to mean anything.
  while (next_version.load() < 32) std::this_thread::yield();
  constexpr uint64_t kMinServed = 200;
  const uint64_t lookups_before = c.master->lookups;
  for (uint64_t g = 0; g < gets || (served < kMinServed && g < 100 * gets); ++g) {
    Client& r = *readers[rng() % readers.size()];
    std::vector<std::string> names;
    std::vector<uint64_t> keys;
    for (uint64_t n = 1 + rng() % 4; n > 0; --n) {
      keys.push_back(rng() % 6);  // a hot few: repeated gets hit the caches
      names.push_back("key-" + std::to_string(keys.back()));
    }
    requested += names.size();
    auto got = r.BatchGet(names);
    for (size_t i = 0; i < got.size(); ++i) {
      if (!got[i].ok()) continue;
      ++served;
      const uint64_t v = VersionOf(*got[i], keys[i]);
      std::lock_guard<std::mutex> lock(mu);
      if (v == 0 || written[keys[i]].count(v) == 0) ++wrong;
    }
  }
  stop.store(true);
  w1.join();
  w2.join();
  const uint64_t lookups = c.master->lookups - lookups_before;
  MESSAGE("keys asked: " << requested << ", served: " << served << ", master lookups: "
                          << lookups << ", versions written: " << next_version.load() - 1);
  CHECK(wrong == 0);
  CHECK(served > 0);
  CHECK(lookups < requested);  // some gets were served directly
}

}  // namespace mc::client

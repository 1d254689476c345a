// Test support for direct reads (client/direct_reads.h): the master core in
// process behind a MasterLink, values stamped with their key and version, and
// the race of readers against removing, upserting and re-putting writers
// that direct_reads_test (same-host) and store's direct_reads_tcp_test (TCP
// data ports) run. Header-only, for tests.
#pragma once

#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <functional>
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
#include "common/error_code.h"
#include "common/test_count.h"
#include "common/test_seed.h"
#include "eviction/testing_policy.h"
#include "master/master_state.h"
#include "transfer/write_epochs.h"

namespace mc::client::testing {

const msg::ClientId kStoreOwner{9, 9};

struct Master {
  Master(const Clock& c, master::Options o)
      : clock(c), state(o, std::make_unique<master::ExactLruPolicy>()) {}
  const Clock& clock;
  std::mutex mu;
  master::MasterState state;
  std::atomic<uint64_t> lookups{0};   // keys asked for by GetReplicaList
  std::atomic<uint64_t> reported{0};  // keys counted by ReportAccesses
  // What masterd's Retirer does over the data port (masterd/retirer.h): the
  // ranges of removed, replaced and evicted objects are retired on their
  // stores before the operation is answered. Null: nothing is retired.
  std::function<void(const master::StaleRange&)> retire;
  // Under mu: retires what the last operation removed.
  void RetireStale() {
    if (!retire) return;
    for (const master::StaleRange& r : state.TakeStaleRanges()) retire(r);
  }
  // Run once, outside mu, after the next GetReplicaList was answered and
  // before its caller reads: a test's way to build an exact interleaving.
  std::function<void()> after_lookup;
  void AfterLookup() {
    std::function<void()> f;
    {
      std::lock_guard<std::mutex> lock(mu);
      f.swap(after_lookup);
    }
    if (f) f();
  }
};

// The master core as masterd serves it, with a sealed-read grant on every
// read buffer (a signature the shm path does not verify: it holds no key).
class Link final : public MasterLink {
  template <typename F>
  auto Locked(F&& f) {
    std::lock_guard<std::mutex> lock(m_->mu);
    auto r = f(m_->clock.NowUs());
    m_->RetireStale();  // before the reply, as masterd does
    return r;
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
    m_->AfterLookup();
    return r;
  }
  Result<msg::Batch<msg::BatchItem<msg::GetReplicaListReply>>> BatchGetReplicaList(
      const msg::Batch<msg::KeyRequest>& q) override {
    m_->lookups.fetch_add(q.size());
    auto r = Locked([&](uint64_t now) { return m_->state.BatchGetReplicaList(q, now); });
    if (r.ok()) {
      for (auto& item : *r) Grant(item.value);
    }
    m_->AfterLookup();
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

// A value stamped with its key and version in every 16 bytes.
inline std::vector<uint8_t> Stamped(uint64_t key, uint64_t version, size_t bytes) {
  std::vector<uint8_t> v(bytes);
  for (size_t i = 0; i + 16 <= bytes; i += 16) {
    StoreLe64(&v[i], key);
    StoreLe64(&v[i + 8], version);
  }
  return v;
}

// The version `v` is uniformly stamped with for `key`; 0 when it is not.
inline uint64_t VersionOf(const std::vector<uint8_t>& v, uint64_t key) {
  if (v.size() < 16 || v.size() % 16 != 0) return 0;
  const uint64_t version = LoadLe64(&v[8]);
  for (size_t i = 0; i < v.size(); i += 16) {
    if (LoadLe64(&v[i]) != key || LoadLe64(&v[i + 8]) != version) return 0;
  }
  return version;
}

// What a racing writer's acknowledgements promise a reader (issue 33): once
// a remove or an upsert of a key was acknowledged, no read that starts
// afterwards returns a version whose put was acknowledged before that
// remove or upsert started (it was removed or replaced, whatever the reader
// cached). Events are numbered in the order they were recorded; a version's
// put is recorded after it returned, a removal's start before it was sent,
// so the model only ever calls dead what really was. Thread-safe.
class AckModel {
 public:
  explicit AckModel(uint64_t keys) : acked_(keys), dead_(keys) {}
  uint64_t Now() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  void PutAcked(uint64_t key, uint64_t version) {
    std::lock_guard<std::mutex> lock(mu_);
    acked_[key][version] = ++events_;
  }
  // A remove or upsert of `key` that started at `started` was acknowledged.
  void Superseded(uint64_t key, uint64_t started, uint64_t except_version = 0) {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t now = ++events_;
    for (const auto& [version, at] : acked_[key]) {
      if (at <= started && version != except_version) dead_[key].emplace(version, now);
    }
  }
  // True when `version` of `key` was dead before a read that started at `started`.
  bool DeadBefore(uint64_t key, uint64_t version, uint64_t started) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = dead_[key].find(version);
    return it != dead_[key].end() && it->second <= started;
  }

 private:
  std::mutex mu_;
  uint64_t events_ = 0;
  std::vector<std::map<uint64_t, uint64_t>> acked_;  // version -> event of its ack
  std::vector<std::map<uint64_t, uint64_t>> dead_;   // version -> event it died by
};


struct RaceStats {
  uint64_t requested = 0, served = 0, wrong = 0, old = 0, lookups = 0, versions = 0;
  uint64_t direct = 0;  // keys of the read loop's gets that did not ask the master
  uint64_t puts = 0, puts_failed = 0;
  uint64_t final_keys = 0;  // keys present after the writers stopped, read once more
  std::map<ErrorCode, uint64_t> put_errors;  // failed puts by code
  std::map<ErrorCode, uint64_t> get_errors;  // failed gets by code
  std::string PutErrors() const { return Codes(put_errors); }
  std::string GetErrors() const { return Codes(get_errors); }
  static std::string Codes(const std::map<ErrorCode, uint64_t>& errors) {
    std::string out;
    for (const auto& [code, n] : errors) {
      out += (out.empty() ? "" : ", ") + std::string(ErrorCodeName(code)) + " x" + std::to_string(n);
    }
    return out.empty() ? "none" : out;
  }
};

// Runs `run(seed)` for MC_DIRECT_SEEDS seeds (default `fallback`), the first
// TestSeed's (MC_SEED replays it), each printed so a failure can be replayed
// alone with MC_SEED=<it> MC_DIRECT_SEEDS=1. MC_DIRECT_FIX_OFF=1 runs them
// with one retired mark per 4 KiB region (WriteEpochs' testing hook), the
// scheme that let a removed version be cached: by hand, to see the checker fail.
template <typename Run>
void ForSeeds(const char* what, uint64_t fallback, Run&& run) {
  const uint64_t first = TestSeed(what);
  const uint64_t n = TestCount("MC_DIRECT_SEEDS", fallback);
  const bool fix_off = TestCount("MC_DIRECT_FIX_OFF", 0) != 0;
  transfer::WriteEpochs::TestingClearWholeRegionsOnWrite(fix_off);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t seed = first + 3 * i;  // a run uses seed, seed + 1 and seed + 2
    std::printf("%s: run %llu, seed %llu\n", what, static_cast<unsigned long long>(i),
                static_cast<unsigned long long>(seed));
    run(seed);
  }
  transfer::WriteEpochs::TestingClearWholeRegionsOnWrite(false);
}

// Readers with their own caches (3 clients of `new_client`) race two writers
// that re-put, upsert, remove (forced or not), remove everything and fill a
// small pool so puts evict; `gets` batch gets at least. `wrong`: gets that
// returned bytes of another key or of no version ever written; `old`: gets
// that returned a version removed or replaced before they started (AckModel).
class Race {
 public:
  using NewClient = std::function<std::unique_ptr<Client>()>;
  Race(Master& m, ManualClock& clock, NewClient new_client)
      : m_(m), clock_(clock), new_client_(std::move(new_client)) {}

  RaceStats Run(uint64_t seed, uint64_t gets) {
    std::thread w1([&] { Write(seed); }), w2([&] { Write(seed + 1); });
    std::mt19937_64 rng(seed + 2);
    std::vector<std::unique_ptr<Client>> readers;
    for (int i = 0; i < 3; ++i) readers.push_back(new_client_());
    RaceStats out;
    // On a loaded machine the writers may not have run yet: read only once
    // there is something to read, and keep reading (up to a bound on the
    // iterations, not on time) until enough gets were served, and enough of
    // them without the master, to mean anything. (The writers can hold the
    // pool full of leased and held versions for a while, when nearly every
    // get finds nothing; a run that stopped there checked no direct read.)
    while (next_version_.load() < 32) std::this_thread::yield();
    constexpr uint64_t kMinServed = 200;
    constexpr uint64_t kMinDirect = 20;
    const uint64_t lookups_before = m_.lookups;
    for (uint64_t g = 0;
         g < gets || ((out.served < kMinServed || out.direct < kMinDirect) && g < 100 * gets);
         ++g) {
      Read(*readers[rng() % readers.size()], rng, out);
    }
    stop_.store(true);
    w1.join();
    w2.join();
    // The value each key is left with is the last version acknowledged for
    // it (any older one is dead), from one writer, whole.
    auto last = new_client_();
    for (uint64_t k = 0; k < kKeys; ++k) out.final_keys += CheckOne(*last, k, out);
    out.lookups = m_.lookups - lookups_before;
    out.versions = next_version_.load() - 1;
    std::lock_guard<std::mutex> lock(mu_);
    out.puts = puts_;
    out.put_errors = put_errors_;
    for (const auto& [code, n] : put_errors_) out.puts_failed += n;
    return out;
  }

 private:
  static constexpr uint64_t kKeys = 24;

  // Both writers upsert, put and remove every key: when two upserts of one
  // key overlap, the later one supersedes the earlier, whose PutEnd fails
  // (master_state_supersede.cc), so only a version that became the key's is
  // acknowledged and the AckModel never calls a live version dead.
  void Write(uint64_t seed) {
    std::mt19937_64 rng(seed);
    auto client = new_client_();
    for (uint64_t n = 0; !stop_.load(); ++n) {
      uint64_t key = rng() % kKeys;
      const uint64_t op = rng() % 100;
      const std::string name = "key-" + std::to_string(key);
      clock_.AdvanceUs(500);
      if (n % 16 == 0) {
        std::lock_guard<std::mutex> lock(m_.mu);
        // The stores stay alive however long the run (client_ttl).
        (void)m_.state.Ping({kStoreOwner}, clock_.NowUs());
        (void)m_.state.Tick(clock_.NowUs());
        m_.RetireStale();
      }
      const uint64_t started = acks_.Now();
      if (op < 15) {
        if (client->Remove(name, rng() % 2 == 0).ok()) acks_.Superseded(key, started);
      } else if (op < 17) {
        if (client->RemoveAll(true).ok()) {
          for (uint64_t k = 0; k < kKeys; ++k) acks_.Superseded(k, started);
        }
      } else {
        const uint64_t version = next_version_.fetch_add(1);
        {
          std::lock_guard<std::mutex> lock(mu_);
          written_[key].insert(version);
        }
        msg::PutOptions po;
        po.upsert = op < 70;
        const Status put = client->Put(name, Stamped(key, version, 16 * (1 + rng() % 1024)), po);
        {
          std::lock_guard<std::mutex> lock(mu_);
          ++puts_;
          if (!put.ok()) ++put_errors_[put.code()];
        }
        if (put.ok()) {
          acks_.PutAcked(key, version);
          // A put that succeeded found the key absent, or replaced it:
          // whatever was acked before it started was removed, evicted or
          // replaced by the time it was acknowledged.
          acks_.Superseded(key, started, version);
        }
      }
    }
  }

  void Read(Client& r, std::mt19937_64& rng, RaceStats& out) {
    std::vector<std::string> names;
    std::vector<uint64_t> keys;
    for (uint64_t n = 1 + rng() % 4; n > 0; --n) {
      keys.push_back(rng() % 6);  // a hot few: repeated gets hit the caches
      names.push_back("key-" + std::to_string(keys.back()));
    }
    out.requested += names.size();
    const uint64_t started = acks_.Now();
    // A key with no cached location before the get was read through the master.
    std::vector<bool> cached;
    for (const std::string& n : names) cached.push_back(r.CachedLocation(n).has_value());
    // Only this thread asks the master for locations while the loop runs.
    const uint64_t asked_before = m_.lookups;
    auto got = r.BatchGet(names);
    const uint64_t asked = m_.lookups - asked_before;
    out.direct += names.size() > asked ? names.size() - asked : 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (!got[i].ok()) {
        ++out.get_errors[got[i].status().code()];
        continue;
      }
      ++out.served;
      const uint64_t v = VersionOf(*got[i], keys[i]);
      if (v != 0 && acks_.DeadBefore(keys[i], v, started)) {
        ++out.old;
        std::printf("old: key %llu version %llu, %s\n", static_cast<unsigned long long>(keys[i]),
                    static_cast<unsigned long long>(v),
                    cached[i] ? "a location was cached" : "read through the master");
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (v == 0 || written_[keys[i]].count(v) == 0) ++out.wrong;
    }
  }

  // Reads `key` through the master once more, counting a wrong or dead
  // version into `out`; 1 when it was found.
  uint64_t CheckOne(Client& r, uint64_t key, RaceStats& out) {
    const uint64_t started = acks_.Now();
    auto got = r.Get("key-" + std::to_string(key));
    if (!got.ok()) return 0;
    const uint64_t v = VersionOf(*got, key);
    if (v != 0 && acks_.DeadBefore(key, v, started)) {
      ++out.old;
      std::printf("old at the end: key %llu version %llu\n", static_cast<unsigned long long>(key),
                  static_cast<unsigned long long>(v));
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (v == 0 || written_[key].count(v) == 0) ++out.wrong;
    return 1;
  }

  Master& m_;
  ManualClock& clock_;
  NewClient new_client_;
  std::mutex mu_;
  std::vector<std::set<uint64_t>> written_ = std::vector<std::set<uint64_t>>(kKeys);  // by key
  uint64_t puts_ = 0;                         // under mu_
  std::map<ErrorCode, uint64_t> put_errors_;  // under mu_
  std::atomic<uint64_t> next_version_{1};
  std::atomic<bool> stop_{false};
  AckModel acks_{kKeys};
};

}  // namespace mc::client::testing

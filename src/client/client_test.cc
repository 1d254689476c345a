// The client's data-path policy over its two seams: the master core in
// process behind MasterLink (a manual clock), and in-memory stores behind
// the same fallback of shm / RDMA / TCP layers Connect builds. What is
// checked here was checked only end to end before: a failed write revokes
// the put, a get falls to the next replica, a store found unreachable is
// skipped, leases are released, and each op is counted on its path.
#include "client/client.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client/master_link.h"
#include "common/clock.h"
#include "common/host_identity.h"
#include "eviction/testing_policy.h"
#include "master/master_state.h"
#include "transfer/fake_transport.h"
#include "transfer/fallback_transport.h"

namespace mc::client {
namespace {

using transfer::testing::FakeStores;
using transfer::testing::FakeTransport;

constexpr uint64_t kSegmentBytes = 1 << 20;
const msg::ClientId kStoreOwner{7, 7};

// The master core and what the client told it; shared by the test and the
// link the client owns, so it outlives the client (whose last report is
// sent when it is destroyed). One lock around every call, as masterd holds.
struct Master {
  explicit Master(const Clock& c)
      : clock(c), state(master::Options{}, std::make_unique<master::ExactLruPolicy>()) {}
  const Clock& clock;
  std::mutex mu;
  master::MasterState state;
  std::vector<std::string> revoked, released;
  std::vector<msg::TransferReport> reports;
  // PutEnds answered with this error, unapplied (OK: served): as a leader
  // that died before its log held them.
  ErrorCode lost_put_end = ErrorCode::OK;
};

// MasterLink over the core, as masterd's service calls it (no grants are
// signed: the fake stores check none). Placement travels as the real
// master takes it: BatchPutStartEx is BatchPutStart with the wishes.
class InProcessLink final : public MasterLink {
  // Calls `f` with the clock's time under the master's lock.
  template <typename F>
  auto Locked(F&& f) {
    std::lock_guard<std::mutex> lock(m_->mu);
    return f(m_->clock.NowUs());
  }

 public:
  explicit InProcessLink(std::shared_ptr<Master> m) : m_(std::move(m)) {}

  Result<msg::PutStartReply> PutStart(const msg::PutStartRequest& req) override {
    return Locked([&](uint64_t now) { return m_->state.PutStart(req, now); });
  }
  Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> BatchPutStart(
      const msg::Batch<msg::PutStartRequest>& req) override {
    return Locked([&](uint64_t now) { return m_->state.BatchPutStart(req, now); });
  }
  Result<msg::Batch<msg::BatchItem<msg::PutStartReply>>> BatchPutStartEx(
      const msg::Batch<msg::PutStartExRequest>& req) override {
    msg::Batch<msg::PutStartRequest> plain;
    for (const auto& r : req) plain.push_back(r.start);
    return BatchPutStart(plain);
  }
  Status PutEnd(const msg::KeyRequest& req) override {
    if (m_->lost_put_end != ErrorCode::OK) return Error(m_->lost_put_end, "lost");
    return Locked([&](uint64_t now) { return m_->state.PutEnd(req, now); });
  }
  Result<msg::Batch<Status>> BatchPutEnd(const msg::Batch<msg::KeyRequest>& req) override {
    if (m_->lost_put_end != ErrorCode::OK) return Error(m_->lost_put_end, "lost");
    return Locked([&](uint64_t now) { return m_->state.BatchPutEnd(req, now); });
  }
  Result<msg::Batch<Status>> BatchPutRevoke(const msg::Batch<msg::KeyRequest>& req) override {
    return Locked([&](uint64_t now) {
      for (const auto& r : req) m_->revoked.push_back(r.key);
      return m_->state.BatchPutRevoke(req, now);
    });
  }
  Result<msg::GetReplicaListReply> GetReplicaList(const msg::KeyRequest& req) override {
    return Locked([&](uint64_t now) { return m_->state.GetReplicaList(req, now); });
  }
  Result<msg::Batch<msg::BatchItem<msg::GetReplicaListReply>>> BatchGetReplicaList(
      const msg::Batch<msg::KeyRequest>& req) override {
    return Locked([&](uint64_t now) { return m_->state.BatchGetReplicaList(req, now); });
  }
  void ReleaseLeasesSoon(const msg::Batch<msg::KeyRequest>& req) override {
    Locked([&](uint64_t now) {
      for (const auto& r : req) m_->released.push_back(r.key);
      m_->state.ReleaseLeases(req, now);
      return 0;
    });
  }
  Result<bool> ExistKey(const msg::KeyRequest& req) override {
    return Locked([&](uint64_t now) { return m_->state.ExistKey(req, now); });
  }
  Result<msg::Batch<msg::BatchItem<bool>>> BatchExistKey(
      const msg::Batch<msg::KeyRequest>& req) override {
    return Locked([&](uint64_t now) { return m_->state.BatchExistKey(req, now); });
  }
  Status Remove(const msg::RemoveRequest& req) override {
    return Locked([&](uint64_t now) { return m_->state.Remove(req, now); });
  }
  Result<msg::Batch<Status>> BatchRemove(const msg::Batch<msg::RemoveRequest>& req) override {
    msg::Batch<Status> out;
    for (const auto& r : req) out.push_back(Remove(r));
    return out;
  }
  Result<msg::RemoveAllReply> RemoveAll(bool force) override {
    return Locked([&](uint64_t now) { return m_->state.RemoveAll(now, force); });
  }
  Result<msg::ListKeysReply> ListKeys(const msg::ListKeysRequest& req) override {
    return Locked([&](uint64_t now) { return m_->state.ListKeys(req, now); });
  }
  Result<msg::ClusterStatusReply> ClusterStatus() override {
    return Locked([&](uint64_t now) { return m_->state.ClusterStatus(now); });
  }
  Status ReportTransfers(const msg::TransferReport& report) override {
    return Locked([&](uint64_t) {
      m_->reports.push_back(report);
      return Status::Ok();
    });
  }

 private:
  std::shared_ptr<Master> m_;
};

std::string Remote(int i) { return "10.0.0." + std::to_string(i) + ":" + std::to_string(7000 + i); }
const std::string kLocal = "10.0.0.99:7099";

// A master with `remotes` stores on other hosts (and one on this host, with
// a segment file, when `local`), in-memory stores, and a client over them.
struct Cluster {
  ManualClock clock;
  FakeStores stores;
  std::shared_ptr<Master> master = std::make_shared<Master>(clock);
  FakeTransport* shm = nullptr;
  FakeTransport* rdma = nullptr;  // with `with_rdma` only
  FakeTransport* tcp = nullptr;
  std::unique_ptr<Client> client;

  explicit Cluster(int remotes, bool local = false, bool with_rdma = false) {
    for (int i = 1; i <= remotes; ++i) Mount(Remote(i), "host-" + std::to_string(i), "");
    if (local) Mount(kLocal, HostIdentity(), "/dev/shm/mooncake-client-test");
    std::vector<transfer::FallbackTransport::Layer> layers;
    layers.push_back({Fake("shm", &shm),
                      [](const transfer::TransferOp& op) { return !op.endpoint->shm_path.empty(); },
                      [](const Status&) { return true; }});
    if (with_rdma) {
      layers.push_back({Fake("rdma", &rdma), nullptr, [](const Status& st) {
                          return st.code() == ErrorCode::NOT_SUPPORTED;
                        }});
    }
    layers.push_back({Fake("tcp", &tcp), nullptr, nullptr});
    client = Client::Make(Config{}, std::make_unique<InProcessLink>(master),
                          std::make_unique<transfer::FallbackTransport>(std::move(layers)), &clock);
  }

  void Mount(const std::string& endpoint, const std::string& host, const std::string& shm_path) {
    stores.Add(endpoint, kSegmentBytes);
    msg::SegmentDesc seg;
    seg.name = seg.endpoint = endpoint;
    seg.hostname = host;
    seg.shm_path = shm_path;
    seg.size_bytes = kSegmentBytes;
    seg.incarnation = 1;
    REQUIRE(master->state.MountSegment({kStoreOwner, seg}, clock.NowUs()).ok());
  }
  std::unique_ptr<FakeTransport> Fake(const char* name, FakeTransport** keep) {
    auto t = std::make_unique<FakeTransport>(name, &stores);
    *keep = t.get();
    return t;
  }
  // Where each replica of `key` is, in the master's order (takes a lease).
  std::vector<std::string> Stores(const std::string& key) {
    auto where = client->Locate(key);
    REQUIRE(where.ok());
    std::vector<std::string> out;
    for (const auto& r : where->replicas) out.push_back(r.buffers.at(0).endpoint);
    return out;
  }
  size_t tracked_reads() {
    std::lock_guard<std::mutex> lock(master->mu);
    return master->state.tracked_reads();
  }
};

std::vector<uint8_t> Value(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 31);
  return v;
}

msg::PutOptions Replicas(uint32_t n, std::vector<std::string> preferred = {}) {
  msg::PutOptions o;
  o.replicas = n;
  o.placement.preferred_segments = std::move(preferred);
  return o;
}

}  // namespace

TEST_CASE("a put whose write fails is revoked at the master and can be put again") {
  Cluster c(1);
  c.tcp->Refuse(Remote(1), ErrorCode::TRANSFER_FAIL);
  const auto value = Value(1000, 3);
  CHECK(c.client->Put("k", value, {}).code() == ErrorCode::TRANSFER_FAIL);
  CHECK(c.master->revoked == std::vector<std::string>{"k"});
  CHECK_FALSE(c.client->Exists("k").value());
  c.tcp->Heal(Remote(1));
  REQUIRE(c.client->Put("k", value, {}).ok());
  CHECK(c.client->Get("k").value() == value);
  CHECK(c.master->revoked.size() == 1);
}

TEST_CASE("a put whose PutEnd was never acknowledged is revoked, never left half-visible") {
  Cluster c(1);
  const auto value = Value(4096, 5);
  c.master->lost_put_end = ErrorCode::RPC_FAIL;  // the leader died with it
  CHECK(c.client->Put("k", value, {}).code() == ErrorCode::RPC_FAIL);
  auto st = c.client->BatchPut({"b1", "b2"}, {value, value}, {});
  CHECK(st[0].code() == ErrorCode::RPC_FAIL);
  CHECK(st[1].code() == ErrorCode::RPC_FAIL);
  CHECK(c.master->revoked == std::vector<std::string>{"k", "b1", "b2"});
  c.master->lost_put_end = ErrorCode::OK;
  for (const char* k : {"k", "b1", "b2"}) CHECK_FALSE(c.client->Exists(k).value());
  {
    std::lock_guard<std::mutex> lock(c.master->mu);
    CHECK(c.master->state.DumpObjects(false).empty());  // no put left in progress
  }
  REQUIRE(c.client->Put("k", value, {}).ok());
  CHECK(c.client->Get("k").value() == value);
}

TEST_CASE("a batch put whose write fails revokes the keys it started and no others") {
  Cluster c(1);
  const auto a = Value(100, 1), b = Value(100, 2);
  REQUIRE(c.client->Put("a", a, {}).ok());
  c.tcp->Refuse(Remote(1), ErrorCode::TRANSFER_FAIL);
  auto st = c.client->BatchPut({"a", "b"}, {a, b}, {});
  CHECK(st[0].code() == ErrorCode::OBJECT_ALREADY_EXISTS);
  CHECK(st[1].code() == ErrorCode::TRANSFER_FAIL);
  CHECK(c.master->revoked == std::vector<std::string>{"b"});
  c.tcp->Heal(Remote(1));
  CHECK(c.client->Get("a").value() == a);  // not touched by the failed batch
  st = c.client->BatchPut({"b"}, {b}, {});
  CHECK(st[0].ok());
}

TEST_CASE("a get whose first replica cannot be read reads the next replica") {
  Cluster c(2);
  const auto value = Value(4096, 9);
  REQUIRE(c.client->Put("k", value, Replicas(2)).ok());
  const auto where = c.Stores("k");
  REQUIRE(where.size() == 2);
  CHECK(c.stores.Bytes(where[0]) == c.stores.Bytes(where[1]));
  c.tcp->Refuse(where[0], ErrorCode::TRANSFER_FAIL);
  const int before = c.tcp->tried(where[1]);
  auto got = c.client->Get("k");
  REQUIRE(got.ok());
  CHECK(*got == value);
  CHECK(c.tcp->tried(where[0]) > 0);
  CHECK(c.tcp->tried(where[1]) == before + 1);
}

TEST_CASE("a store found unreachable is not tried again in the same batch get") {
  Cluster c(2);
  const std::vector<std::string> keys{"k1", "k2", "k3", "k4"};
  for (size_t i = 0; i < keys.size(); ++i) {
    REQUIRE(c.client->Put(keys[i], Value(512, static_cast<uint8_t>(i)), Replicas(2)).ok());
  }
  const std::string gone = c.Stores("k1")[0];
  int first_on_gone = 0;
  for (const auto& k : keys) first_on_gone += c.Stores(k)[0] == gone ? 1 : 0;
  c.tcp->SetUnreachable(gone);
  const int before = c.tcp->tried(gone);  // the puts wrote there
  auto got = c.client->BatchGet(keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    REQUIRE(got[i].ok());
    CHECK(*got[i] == Value(512, static_cast<uint8_t>(i)));
  }
  // Tried once per key in the batch that found it gone, never key by key.
  CHECK(c.tcp->tried(gone) - before == first_on_gone);
}

TEST_CASE("a get whose every replica is on an unreachable store fails naming it") {
  Cluster c(1);
  REQUIRE(c.client->Put("k", Value(64, 1), {}).ok());
  c.tcp->SetUnreachable(Remote(1));
  auto got = c.client->Get("k");
  CHECK(got.code() == ErrorCode::TRANSFER_FAIL);
  CHECK(got.status().message().find(Remote(1)) != std::string::npos);
}

TEST_CASE("a get releases its lease at the master and a locate keeps it") {
  Cluster c(1);
  for (const char* k : {"got", "located", "sized"}) REQUIRE(c.client->Put(k, Value(10, 1), {}).ok());
  REQUIRE(c.client->Get("got").ok());
  CHECK(c.master->released == std::vector<std::string>{"got"});
  CHECK(c.tracked_reads() == 0);
  CHECK(c.client->Remove("got", /*force=*/false).ok());

  REQUIRE(c.client->Locate("located").ok());
  CHECK(c.tracked_reads() == 1);
  CHECK(c.client->Remove("located", false).code() == ErrorCode::OBJECT_HAS_LEASE);

  REQUIRE(c.client->Size("sized").value() == 10);
  CHECK(c.master->released.back() == "sized");
  CHECK(c.client->Remove("sized", false).ok());
}

TEST_CASE("a batch get releases the leases it was granted and no others") {
  Cluster c(1);
  REQUIRE(c.client->Put("here", Value(10, 1), {}).ok());
  auto got = c.client->BatchGet({"here", "absent"});
  CHECK(got[0].ok());
  CHECK(got[1].code() == ErrorCode::OBJECT_NOT_FOUND);
  CHECK(c.master->released == std::vector<std::string>{"here"});
  CHECK(c.tracked_reads() == 0);
}

TEST_CASE("each op is counted on the path that moved it") {
  Cluster c(1, /*local=*/true, /*with_rdma=*/true);
  c.rdma->Refuse(Remote(1), ErrorCode::NOT_SUPPORTED);
  const auto value = Value(2000, 5);
  // One replica on this host (shm), one on a store without RDMA (TCP).
  REQUIRE(c.client->Put("k", value, Replicas(2, {kLocal, Remote(1)})).ok());
  auto n = c.client->path_counts();
  CHECK(n.same_host == 1);
  CHECK(n.rdma == 0);
  CHECK(n.tcp == 1);
  CHECK(n.tcp_fallback == 1);
  CHECK(c.client->last_transfer_path() == "tcp");

  REQUIRE(c.client->Get("k").value() == value);  // the same-host replica first
  CHECK(c.client->path_counts().same_host == 2);
  CHECK(c.client->last_transfer_path() == "same-host");

  c.shm->Refuse(kLocal, ErrorCode::TRANSFER_FAIL);  // the segment cannot be mapped
  REQUIRE(c.client->Get("k").value() == value);
  n = c.client->path_counts();
  CHECK(n.same_host == 2);
  CHECK(n.rdma == 1);
  CHECK(n.tcp_fallback == 1);
  CHECK(c.client->last_transfer_path() == "rdma");
}

TEST_CASE("transfer counts reach the master at most once a second and at close") {
  Cluster c(1);
  const auto value = Value(300, 1);
  REQUIRE(c.client->Put("k", value, {}).ok());
  REQUIRE(c.master->reports.size() == 1);  // the first transfer reports at once
  const auto& first = c.master->reports[0].counts;
  REQUIRE(first.size() == 1);
  CHECK(first[0].path == static_cast<uint8_t>(msg::TransferPath::kTcp));
  CHECK(first[0].dir == static_cast<uint8_t>(msg::TransferDir::kPut));
  CHECK(first[0].ops == 1);
  CHECK(first[0].bytes == value.size());

  REQUIRE(c.client->Get("k").ok());
  CHECK(c.master->reports.size() == 1);  // within the interval: held back
  c.clock.AdvanceMs(1000);
  REQUIRE(c.client->Get("k").ok());
  REQUIRE(c.master->reports.size() == 2);
  const auto& second = c.master->reports[1].counts;
  REQUIRE(second.size() == 1);
  CHECK(second[0].dir == static_cast<uint8_t>(msg::TransferDir::kGet));
  CHECK(second[0].ops == 2);
  CHECK(second[0].bytes == 2 * value.size());

  REQUIRE(c.client->Get("k").ok());
  c.client.reset();  // closing sends what is left
  REQUIRE(c.master->reports.size() == 3);
  CHECK(c.master->reports[2].counts.at(0).ops == 1);
}

TEST_CASE("a registered buffer is registered with the transport") {
  Cluster c(1, false, /*with_rdma=*/true);
  std::vector<uint8_t> buffer(64);
  REQUIRE(c.client->RegisterBuffer(buffer.data(), buffer.size()).ok());
  CHECK(c.rdma->registered(buffer.data()));
  REQUIRE(c.client->UnregisterBuffer(buffer.data()).ok());
  CHECK_FALSE(c.rdma->registered(buffer.data()));
}

}  // namespace mc::client

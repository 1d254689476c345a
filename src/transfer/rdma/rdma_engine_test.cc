// RdmaEngine against the fake fabric: a "store" (RdmaResponder over a
// segment) and a client engine in one process, connected without sockets.
#include "transfer/rdma/rdma_engine.h"

#include <doctest/doctest.h>

#include <atomic>
#include <random>

#include "common/test_seed.h"
#include "transfer/rdma/rdma_responder.h"
#include "transfer/rdma/rdma_transport.h"
#include "transfer/rdma/verbs_fake.h"

using namespace mc;
using namespace mc::transfer;

namespace {

class LocalConnector final : public PeerConnector {
 public:
  LocalConnector(RdmaResponder* r, uint64_t id, std::atomic<bool>* alive)
      : r_(r), id_(id), alive_(alive) {}
  ~LocalConnector() override { r_->Release(id_); }
  Result<RdmaSegmentDesc> Describe() override {
    // Through the wire encoding, as a real peer would see it.
    return DecodeDescriptor(EncodeDescriptor(r_->desc()));
  }
  Result<RdmaConnectReply> Connect(const RdmaConnectRequest& req) override {
    return r_->Connect(id_, req);
  }
  bool Alive() override { return alive_->load(); }

 private:
  RdmaResponder* r_;
  uint64_t id_;
  std::atomic<bool>* alive_;
};

struct Rig {
  FakeFabric fabric;
  FakeVerbs verbs{&fabric};
  std::vector<uint8_t> segment;
  std::unique_ptr<RdmaResponder> store;
  std::unique_ptr<RdmaEngine> client;
  std::atomic<bool> alive{true};
  std::atomic<int> connects{0};
  bool store_has_rdma = true;
  Endpoint ep{"10.0.0.1", 4000, ""};

  explicit Rig(RdmaEngineOptions o = {}, uint64_t seg_bytes = 8 << 20, uint64_t max_mr = 1 << 30) {
    for (const char* n : {"s0", "s1", "c0", "c1"}) fabric.AddDevice(n, {true, max_mr});
    segment.assign(seg_bytes, 0);
    auto sd = OpenDevices(verbs, "s0,s1");
    REQUIRE(sd.ok());
    auto r = RdmaResponder::Create(std::move(*sd), "10.0.0.1:4000", segment.data(), seg_bytes);
    REQUIRE(r.ok());
    store = std::move(*r);
    auto cd = OpenDevices(verbs, "c0,c1");
    REQUIRE(cd.ok());
    auto factory = [this](const Endpoint&) -> Result<std::unique_ptr<PeerConnector>> {
      int id = ++connects;
      if (!store_has_rdma) return Error(ErrorCode::NOT_SUPPORTED, "no RDMA");
      alive = true;
      return std::unique_ptr<PeerConnector>(new LocalConnector(store.get(), id, &alive));
    };
    auto e = RdmaEngine::Create(std::move(*cd), factory, o);
    REQUIRE(e.ok());
    client = std::move(*e);
  }

  Status Op(OpKind kind, uint64_t off, void* buf, size_t len) {
    TransferOp op;
    op.kind = kind;
    op.endpoint = &ep;
    op.remote_offset = off;
    op.buffer = buf;
    op.len = len;
    return client->Batch({&op, 1});
  }
};

std::vector<uint8_t> Random(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

}  // namespace

TEST_CASE("put and get move the exact bytes, from 1 byte to several slices") {
  RdmaEngineOptions o;
  o.slice_bytes = 64 << 10;
  Rig rig(o);
  std::mt19937_64 rng(TestSeed("rdma engine bytes"));
  for (size_t len : {size_t{1}, size_t{4095}, size_t{64 << 10}, size_t{(1 << 20) + 17}}) {
    const uint64_t off = rng() % ((4 << 20) - len);
    auto data = Random(rng, len);
    REQUIRE(rig.Op(OpKind::kWrite, off, data.data(), len).ok());
    CHECK(std::equal(data.begin(), data.end(), rig.segment.begin() + off));
    std::vector<uint8_t> back(len, 0);
    REQUIRE(rig.Op(OpKind::kRead, off, back.data(), len).ok());
    CHECK(back == data);
  }
  CHECK(rig.client->stats().links_built == 1);  // cached after the first transfer
}

TEST_CASE("slices spread over every NIC and every QP of a peer") {
  RdmaEngineOptions o;
  o.slice_bytes = 16 << 10;
  o.qps_per_peer = 3;
  Rig rig(o);
  std::vector<uint8_t> data(1 << 20, 7);
  REQUIRE(rig.Op(OpKind::kWrite, 0, data.data(), data.size()).ok());
  CHECK(rig.fabric.posts("c0") == 32);
  CHECK(rig.fabric.posts("c1") == 32);
  auto per_qp = rig.fabric.posts_per_qp();
  CHECK(per_qp.size() == 6);
  for (auto& [qpn, n] : per_qp) CHECK(n > 0);
  auto st = rig.client->stats();
  CHECK(st.bytes_per_device[0] == 512 << 10);
  CHECK(st.bytes_per_device[1] == 512 << 10);
}

TEST_CASE("memory regions are cut under max_mr_size and transfers cross them") {
  RdmaEngineOptions o;
  o.slice_bytes = 1 << 20;
  Rig rig(o, 1 << 20, 64 << 10);
  CHECK(rig.store->desc().buffers.size() == 16);
  std::mt19937_64 rng(TestSeed("rdma regions"));
  std::vector<uint8_t> mine = Random(rng, 200 << 10);
  REQUIRE(rig.client->RegisterBuffer(mine.data(), mine.size()).ok());
  REQUIRE(rig.Op(OpKind::kWrite, 1000, mine.data() + 5, 150 << 10).ok());
  CHECK(std::equal(mine.begin() + 5, mine.begin() + 5 + (150 << 10), rig.segment.begin() + 1000));
  CHECK(rig.client->stats().temp_registrations == 0);  // used the registered buffer
  std::vector<uint8_t> other(3000);
  REQUIRE(rig.Op(OpKind::kRead, 1000, other.data(), other.size()).ok());
  CHECK(rig.client->stats().temp_registrations == 1);
  CHECK(std::equal(other.begin(), other.end(), mine.begin() + 5));
  REQUIRE(rig.client->UnregisterBuffer(mine.data()).ok());
  CHECK(rig.client->UnregisterBuffer(mine.data()).code() == ErrorCode::INVALID_PARAMS);
}

TEST_CASE("a failed slice is retried on another QP and the transfer succeeds") {
  RdmaEngineOptions o;
  o.slice_bytes = 16 << 10;
  Rig rig(o);
  std::vector<uint8_t> data(256 << 10, 9);
  rig.fabric.FailNextWrs(1);
  REQUIRE(rig.Op(OpKind::kWrite, 0, data.data(), data.size()).ok());
  CHECK(std::equal(data.begin(), data.end(), rig.segment.begin()));
  auto st = rig.client->stats();
  CHECK(st.qp_errors >= 1);
  CHECK(st.retried_slices >= 1);
}

TEST_CASE("a link whose QPs all broke is rebuilt on the next transfer") {
  RdmaEngineOptions o;
  o.qps_per_peer = 1;
  Rig rig(o);
  std::vector<uint8_t> data(4096, 1);
  REQUIRE(rig.Op(OpKind::kWrite, 0, data.data(), data.size()).ok());
  rig.fabric.FailNextWrs(2);  // both lanes (one per NIC) go to ERROR
  Status st = rig.Op(OpKind::kWrite, 0, data.data(), data.size());
  CHECK(st.ok());  // the batch rebuilt the link and finished on fresh QPs
  CHECK(rig.client->stats().links_built == 2);
}

TEST_CASE("a dead peer fails the transfer with a message naming it") {
  Rig rig;
  std::vector<uint8_t> data(4096, 1);
  REQUIRE(rig.Op(OpKind::kWrite, 0, data.data(), data.size()).ok());
  rig.fabric.KillDevice("s0");
  rig.fabric.KillDevice("s1");
  Status st = rig.Op(OpKind::kWrite, 0, data.data(), data.size());
  CHECK(st.code() == ErrorCode::TRANSFER_FAIL);
  CHECK(st.message().find("10.0.0.1:4000") != std::string::npos);
  CHECK(rig.client->stats().failed_ops == 1);
  // Back to life: the broken QPs are left behind and the next transfer works.
  rig.fabric.ReviveDevice("s0");
  rig.fabric.ReviveDevice("s1");
  CHECK(rig.Op(OpKind::kWrite, 0, data.data(), data.size()).ok());
}

TEST_CASE("a peer that restarted (connection closed) gets a new link") {
  Rig rig;
  std::vector<uint8_t> data(4096, 1);
  REQUIRE(rig.Op(OpKind::kWrite, 0, data.data(), data.size()).ok());
  rig.alive = false;
  REQUIRE(rig.Op(OpKind::kRead, 0, data.data(), data.size()).ok());
  CHECK(rig.client->stats().links_built == 2);
  CHECK(rig.store->qp_count() == 4);  // the old link's QPs were released
}

TEST_CASE("a transfer that never completes times out and its QPs are flushed") {
  RdmaEngineOptions o;
  o.timeout_us = 1;  // expires at the first check: nothing waits on wall time
  Rig rig(o);
  rig.fabric.BlackHoleDevice("s0");
  rig.fabric.BlackHoleDevice("s1");
  std::vector<uint8_t> data(4096, 1);
  Status st = rig.Op(OpKind::kWrite, 0, data.data(), data.size());
  CHECK(st.code() == ErrorCode::TRANSFER_FAIL);
  CHECK(st.message().find("timed out") != std::string::npos);
  CHECK(rig.client->stats().timeouts == 1);
}

TEST_CASE("a peer without RDMA answers NOT_SUPPORTED and is not asked again at once") {
  Rig rig;
  rig.store_has_rdma = false;
  uint8_t b = 0;
  CHECK(rig.Op(OpKind::kWrite, 0, &b, 1).code() == ErrorCode::NOT_SUPPORTED);
  CHECK(rig.Op(OpKind::kWrite, 0, &b, 1).code() == ErrorCode::NOT_SUPPORTED);
  CHECK(rig.connects == 1);
}

TEST_CASE("a range outside the peer's segment is refused before any WR") {
  Rig rig;
  uint8_t b[16] = {};
  CHECK(rig.Op(OpKind::kWrite, (8 << 20) - 8, b, 16).code() == ErrorCode::INVALID_WRITE);
  CHECK(rig.fabric.posts("c0") + rig.fabric.posts("c1") == 0);
}

TEST_CASE("opening a listed device that is missing or down names it") {
  FakeFabric fabric;
  fabric.AddDevice("up0");
  fabric.AddDevice("down0", {false, 1 << 30});
  FakeVerbs verbs(&fabric);
  auto missing = OpenDevices(verbs, "up0,mlx5_9");
  CHECK(missing.code() == ErrorCode::INVALID_PARAMS);
  CHECK(missing.status().message().find("mlx5_9") != std::string::npos);
  auto down = OpenDevices(verbs, "down0");
  CHECK(down.status().message().find("down0") != std::string::npos);
  CHECK(down.status().message().find("ACTIVE") != std::string::npos);
  auto all = OpenDevices(verbs, "");
  CHECK(!all.ok());  // "" opens every device, and down0 is down
  auto t = RdmaTransport::Create({.devices = " up0 "}, &verbs);
  REQUIRE(t.ok());
  CHECK((*t)->device_names() == std::vector<std::string>{"up0"});
}

// FallbackTransport over in-memory layers: which layer each op reaches, what
// passes an op on, what ends a batch, and what it reports per op.
#include "transfer/fallback_transport.h"

#include <doctest/doctest.h>

#include <vector>

#include "transfer/fake_transport.h"

using namespace mc::transfer;
using mc::ErrorCode;
using mc::Status;
using mc::transfer::testing::FakeStores;
using mc::transfer::testing::FakeTransport;

namespace {

// shm (ops with an shm path; any failure passes on), rdma (NOT_SUPPORTED
// passes on), tcp: the client's order.
struct Layers {
  FakeStores stores;
  FakeTransport* shm = nullptr;
  FakeTransport* rdma = nullptr;
  FakeTransport* tcp = nullptr;
  std::unique_ptr<FallbackTransport> all;

  explicit Layers(bool with_rdma = true) {
    stores.Add("10.0.0.1:1", 1 << 16);
    stores.Add("10.0.0.2:2", 1 << 16);
    std::vector<FallbackTransport::Layer> layers;
    auto shm_t = std::make_unique<FakeTransport>("shm", &stores);
    shm = shm_t.get();
    layers.push_back({std::move(shm_t),
                      [](const TransferOp& op) { return !op.endpoint->shm_path.empty(); },
                      [](const Status&) { return true; }});
    if (with_rdma) {
      auto rdma_t = std::make_unique<FakeTransport>("rdma", &stores);
      rdma = rdma_t.get();
      layers.push_back({std::move(rdma_t), nullptr, [](const Status& st) {
                          return st.code() == ErrorCode::NOT_SUPPORTED;
                        }});
    }
    auto tcp_t = std::make_unique<FakeTransport>("tcp", &stores);
    tcp = tcp_t.get();
    layers.push_back({std::move(tcp_t), nullptr, nullptr});
    all = std::make_unique<FallbackTransport>(std::move(layers));
  }
};

Endpoint Ep(const std::string& host, uint16_t port, const std::string& shm = "") {
  return Endpoint{host, port, shm};
}

TransferOp WriteOp(const Endpoint& ep, uint64_t offset, std::vector<uint8_t>& data) {
  TransferOp op;
  op.kind = OpKind::kWrite;
  op.endpoint = &ep;
  op.remote_offset = offset;
  op.buffer = data.data();
  op.len = data.size();
  return op;
}

}  // namespace

TEST_CASE("an op with an shm path moves over shm and the others over the next layer") {
  Layers l;
  const Endpoint local = Ep("10.0.0.1", 1, "/dev/shm/x"), remote = Ep("10.0.0.2", 2);
  std::vector<uint8_t> a(100, 7), b(50, 9);
  std::vector<TransferOp> ops{WriteOp(local, 0, a), WriteOp(remote, 10, b)};
  REQUIRE(l.all->Batch(ops).ok());
  CHECK(ops[0].moved_by == "shm");
  CHECK(ops[1].moved_by == "rdma");
  CHECK(ops[0].passed_on_by.empty());
  CHECK(l.tcp->batches() == 0);
  CHECK(l.stores.Bytes("10.0.0.2:2")[10] == 9);
}

TEST_CASE("an op shm fails goes on to rdma, and one rdma does not serve goes on to tcp") {
  Layers l;
  l.shm->Refuse("10.0.0.1:1", ErrorCode::TRANSFER_FAIL);
  l.rdma->Refuse("10.0.0.2:2", ErrorCode::NOT_SUPPORTED);
  const Endpoint local = Ep("10.0.0.1", 1, "/dev/shm/x"), remote = Ep("10.0.0.2", 2);
  std::vector<uint8_t> a(10, 1), b(10, 2);
  std::vector<TransferOp> ops{WriteOp(local, 0, a), WriteOp(remote, 0, b)};
  REQUIRE(l.all->Batch(ops).ok());
  CHECK(ops[0].moved_by == "rdma");
  CHECK(ops[0].passed_on_by == "shm");
  CHECK(ops[1].moved_by == "tcp");
  CHECK(ops[1].passed_on_by == "rdma");
  CHECK(l.stores.Bytes("10.0.0.2:2")[0] == 2);
}

TEST_CASE("a failure a layer does not pass on fails the batch and leaves later layers untried") {
  Layers l;
  l.rdma->Refuse("10.0.0.2:2", ErrorCode::TRANSFER_FAIL);
  const Endpoint remote = Ep("10.0.0.2", 2), other = Ep("10.0.0.1", 1);
  std::vector<uint8_t> a(10, 1), b(10, 2);
  std::vector<TransferOp> ops{WriteOp(remote, 0, a), WriteOp(other, 0, b)};
  Status st = l.all->Batch(ops);
  CHECK(st.code() == ErrorCode::TRANSFER_FAIL);
  CHECK(st.message().find("10.0.0.2:2") != std::string::npos);
  CHECK(l.tcp->batches() == 0);
  CHECK(ops[0].moved_by.empty());
}

TEST_CASE("the last layer's unreachable peer is reported on its ops") {
  Layers l(/*with_rdma=*/false);
  l.tcp->SetUnreachable("10.0.0.2:2");
  const Endpoint remote = Ep("10.0.0.2", 2), other = Ep("10.0.0.1", 1);
  std::vector<uint8_t> a(10, 1), b(10, 2);
  std::vector<TransferOp> ops{WriteOp(other, 0, b), WriteOp(remote, 0, a)};
  CHECK(l.all->Batch(ops).code() == ErrorCode::TRANSFER_FAIL);
  CHECK_FALSE(ops[0].peer_unreachable);
  CHECK(ops[1].peer_unreachable);
}

TEST_CASE("more ops than one batch holds are moved in chunks") {
  Layers l(/*with_rdma=*/false);
  const Endpoint remote = Ep("10.0.0.2", 2);
  std::vector<uint8_t> byte(1, 5);
  std::vector<TransferOp> ops(kMaxBatchOps + 3, WriteOp(remote, 0, byte));
  REQUIRE(l.all->Batch(ops).ok());
  CHECK(l.tcp->batches() == 2);
  CHECK(l.tcp->tried("10.0.0.2:2") == static_cast<int>(ops.size()));
}

TEST_CASE("an op no layer is offered fails with NOT_SUPPORTED") {
  FakeStores stores;
  std::vector<FallbackTransport::Layer> layers;
  layers.push_back({std::make_unique<FakeTransport>("shm", &stores),
                    [](const TransferOp& op) { return !op.endpoint->shm_path.empty(); }, nullptr});
  FallbackTransport only_shm(std::move(layers));
  const Endpoint remote = Ep("10.0.0.2", 2);
  std::vector<uint8_t> a(1, 1);
  std::vector<TransferOp> ops{WriteOp(remote, 0, a)};
  CHECK(only_shm.Batch(ops).code() == ErrorCode::NOT_SUPPORTED);
}

TEST_CASE("a buffer is registered with every layer") {
  Layers l;
  int buffer = 0;
  REQUIRE(l.all->RegisterBuffer(&buffer, sizeof buffer).ok());
  CHECK(l.rdma->registered(&buffer));
  CHECK(l.tcp->registered(&buffer));
  REQUIRE(l.all->UnregisterBuffer(&buffer).ok());
  CHECK_FALSE(l.rdma->registered(&buffer));
}

TEST_CASE("a sealed read's seal comes back through the fallback") {
  // A layer that proves every read with seal 42.
  class Sealing final : public Transport {
   public:
    std::string_view name() const override { return "sealing"; }
    Status Batch(std::span<TransferOp> ops) override {
      for (TransferOp& op : ops) {
        op.status = Status::Ok();
        if (op.sealed) op.seal = 42;
      }
      return Status::Ok();
    }
  };
  std::vector<FallbackTransport::Layer> layers;
  layers.push_back({std::make_unique<Sealing>(), nullptr, nullptr});
  FallbackTransport t(std::move(layers));
  Endpoint ep{"127.0.0.1", 1, ""};
  uint8_t buf[8];
  TransferOp op;
  op.kind = OpKind::kRead;
  op.endpoint = &ep;
  op.buffer = buf;
  op.len = sizeof buf;
  op.sealed = true;
  REQUIRE(t.Batch({&op, 1}).ok());
  CHECK(op.seal == 42);
}

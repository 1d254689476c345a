// RDMA sealed reads (transfer/rdma/rdma_sealed.h) against a store whose
// epoch table is registered for RDMA, over the fake fabric: a cached seal
// stays good until a retire or a counted write touches the range, an RDMA
// write after a retire never makes it good again, and a store that
// publishes no table sends the reader to TCP.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "dataserver/store_fixture.h"
#include "transfer/rdma/rdma_responder.h"
#include "transfer/rdma/rdma_sealed.h"
#include "transfer/rdma/rdma_transport.h"
#include "transfer/rdma/verbs_fake.h"
#include "transfer/retire_sender.h"
#include "transfer/tcp_transport.h"

using namespace mc;
using namespace mc::transfer;
using mc::transfer::testing::Store;

namespace {

constexpr uint64_t kSegmentBytes = 4 << 20;

// A store serving its segment over RDMA (fake NICs) with its epoch table
// published, as the store process sets it up, and a client's RDMA transport.
struct RdmaSealedStore {
  FakeFabric fabric;
  FakeVerbs verbs{&fabric};
  Store store;
  std::unique_ptr<RdmaResponder> responder;
  std::unique_ptr<TcpDataServer> server;  // the store's data port, with the responder
  Endpoint ep;
  std::unique_ptr<RdmaTransport> rdma;

  explicit RdmaSealedStore(bool publish_table = true) {
    fabric.AddDevice("s0");
    fabric.AddDevice("c0");
    store = Store::Make(kSegmentBytes);
    auto devs = OpenDevices(verbs, "s0");
    REQUIRE(devs.ok());
    auto r = RdmaResponder::Create(std::move(*devs), "seg", store.segment->base(), kSegmentBytes);
    REQUIRE(r.ok());
    responder = std::move(*r);
    if (publish_table) {
      REQUIRE(responder
                  ->AddEpochTable(store.segment->base() + kSegmentBytes,
                                  EpochTableTailBytes(kSegmentBytes), NewEpochNonce())
                  .ok());
    }
    TcpDataServerOptions o;
    o.listen_host = "127.0.0.1";
    o.rdma = responder.get();
    o.epochs = store.segment->epochs();
    auto srv = TcpDataServer::Start(store.segment->base(), kSegmentBytes, AllowAll(), o);
    REQUIRE(srv.ok());
    server = std::move(*srv);
    ep = {"127.0.0.1", server->port(), ""};
    auto t = RdmaTransport::Create({.devices = "c0"}, &verbs);
    REQUIRE(t.ok());
    rdma = std::move(*t);
  }
  ~RdmaSealedStore() {
    rdma.reset();
    server->Stop();
  }

  // A sealed RDMA read of [offset, offset + into.size()) naming `seal`.
  TransferOp Read(uint64_t offset, std::string& into, uint64_t seal) {
    TransferOp op;
    op.kind = OpKind::kRead;
    op.endpoint = &ep;
    op.remote_offset = offset;
    op.buffer = into.data();
    op.len = into.size();
    op.sealed = true;
    op.seal = seal;
    (void)rdma->Batch({&op, 1});
    return op;
  }
};

}  // namespace

TEST_CASE("an RDMA sealed read keeps its seal until the range is retired, and RDMA rewrites "
          "never revive it") {
  RdmaSealedStore s;
  const std::string v1(5000, 'a');
  REQUIRE(s.rdma->Write(s.ep, 8192, v1.data(), v1.size()).ok());
  std::string got(v1.size(), '\0');
  TransferOp learnt = s.Read(8192, got, 0);
  REQUIRE(learnt.status.ok());
  CHECK(learnt.seal != 0);
  CHECK(got == v1);
  // The seal the reader reports is not the table's own (the store's nonce).
  CHECK(learnt.seal != s.store.segment->epochs().Seal(8192, v1.size()));
  std::string again(v1.size(), '\0');
  TransferOp cached = s.Read(8192, again, learnt.seal);
  CHECK(cached.status.ok());
  CHECK(cached.seal == learnt.seal);
  CHECK(again == v1);
  // The master removes the object: the store retires its range.
  RetireSender sender({});
  const RetireRange retire{8192, v1.size(), {}};
  REQUIRE(sender.Retire(s.ep, {&retire, 1}).ok());
  TcpTransport tcp;
  CHECK(s.Read(8192, again, learnt.seal).status.code() == ErrorCode::REPLICA_IS_GONE);
  // The space goes to another object written one-sided: nothing counts it,
  // and the retired marks keep the old seal (and any new one) from matching.
  const std::string v2(5000, 'b');
  REQUIRE(s.rdma->Write(s.ep, 8192, v2.data(), v2.size()).ok());
  CHECK(s.Read(8192, again, learnt.seal).status.code() == ErrorCode::REPLICA_IS_GONE);
  TransferOp relearnt = s.Read(8192, again, 0);
  CHECK(relearnt.status.ok());  // an ordinary read under the reader's lease ...
  CHECK(relearnt.seal == 0);    // ... that proves no seal while the marks stand
  CHECK(again == v2);
  // A TCP write of the range counts and clears them: a new seal, not the old one.
  REQUIRE(tcp.Write(s.ep, 8192, v2.data(), v2.size()).ok());
  relearnt = s.Read(8192, again, 0);
  CHECK(relearnt.seal != 0);
  CHECK(relearnt.seal != learnt.seal);
}

TEST_CASE("an RDMA sealed read is stale after a counted write and proves nothing during one") {
  RdmaSealedStore s;
  const std::string v1(4096, 'c');
  REQUIRE(s.rdma->Write(s.ep, 65536, v1.data(), v1.size()).ok());
  std::string got(v1.size(), '\0');
  const uint64_t seal = s.Read(65536, got, 0).seal;
  REQUIRE(seal != 0);
  WriteEpochs& epochs = s.store.segment->epochs();
  {
    // A write in flight in the range (a TCP or shm writer's count).
    EpochWrite writing(epochs, 65536 + 100, 10);
    CHECK(s.Read(65536, got, seal).status.code() == ErrorCode::REPLICA_IS_GONE);
    TransferOp learning = s.Read(65536, got, 0);
    CHECK(learning.status.ok());
    CHECK(learning.seal == 0);
  }
  // Finished, it still changed the range.
  CHECK(s.Read(65536, got, seal).status.code() == ErrorCode::REPLICA_IS_GONE);
  // A neighbour in another region leaves the seal alone.
  const uint64_t now = s.Read(65536, got, 0).seal;
  REQUIRE(now != 0);
  { EpochWrite elsewhere(epochs, 65536 + 8192, 64); }
  CHECK(s.Read(65536, got, now).status.ok());
  CHECK(got == v1);
}

TEST_CASE("sealed and plain RDMA reads share a batch, each answered as its kind") {
  RdmaSealedStore s;
  const std::string v(3000, 'd');
  REQUIRE(s.rdma->Write(s.ep, 0, v.data(), v.size()).ok());
  // Written over TCP, this range's seal differs from the untouched one's.
  TcpTransport tcp;
  REQUIRE(tcp.Write(s.ep, 1 << 20, v.data(), v.size()).ok());
  std::string a(v.size(), '\0'), b(v.size(), '\0'), c(v.size(), '\0');
  const uint64_t seal = s.Read(0, a, 0).seal;
  REQUIRE(seal != 0);
  TransferOp ops[3];
  for (TransferOp& op : ops) {
    op.kind = OpKind::kRead;
    op.endpoint = &s.ep;
    op.len = v.size();
  }
  ops[0].buffer = a.data();
  ops[0].sealed = true;
  ops[0].seal = seal;
  ops[1].buffer = b.data();
  ops[1].remote_offset = 1 << 20;
  ops[2].buffer = c.data();
  ops[2].remote_offset = 1 << 20;
  ops[2].sealed = true;
  ops[2].seal = seal;  // another range's seal: stale there
  CHECK(s.rdma->Batch(ops).code() == ErrorCode::REPLICA_IS_GONE);
  CHECK(ops[0].status.ok());
  CHECK(a == v);
  CHECK(ops[1].status.ok());
  CHECK(b == v);
  CHECK(ops[2].status.code() == ErrorCode::REPLICA_IS_GONE);
}

TEST_CASE("a store that publishes no epoch table fails RDMA sealed reads NOT_SUPPORTED") {
  RdmaSealedStore s(/*publish_table=*/false);
  const std::string v(100, 'e');
  REQUIRE(s.rdma->Write(s.ep, 0, v.data(), v.size()).ok());  // plain RDMA still works
  std::string got(v.size(), '\0');
  CHECK(s.Read(0, got, 0).status.code() == ErrorCode::NOT_SUPPORTED);
  CHECK(s.Read(0, got, 5).status.code() == ErrorCode::NOT_SUPPORTED);
}

TEST_CASE("the published epoch table is found from the descriptor, its nonce included") {
  RdmaSealedStore s;
  const RdmaSegmentDesc desc = s.responder->desc();
  auto table = FindEpochTable(desc);
  REQUIRE(table.has_value());
  CHECK(table->data_bytes == kSegmentBytes);
  CHECK((table->nonce >> 63) == 1);
  // Contiguous with the segment, so a peer that ignores the name sees a
  // longer segment; an encoded descriptor keeps it.
  CHECK(desc.buffers.back().addr + desc.buffers.back().length ==
        desc.buffers[0].addr + kSegmentBytes + EpochTableTailBytes(kSegmentBytes));
  auto decoded = DecodeDescriptor(EncodeDescriptor(desc));
  REQUIRE(decoded.ok());
  CHECK(FindEpochTable(*decoded)->nonce == table->nonce);
  RdmaSegmentDesc bad = desc;
  bad.buffers.back().name = std::string(kEpochTableBufferPrefix) + "12";
  CHECK(!FindEpochTable(bad).has_value());
}

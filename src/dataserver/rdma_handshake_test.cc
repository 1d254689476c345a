// The RDMA handshake over a real data port on loopback (ops 4 and 5), with
// the fake fabric standing in for NICs: RdmaTransport -> TcpDataServer ->
// RdmaResponder, auth included.
#include <doctest/doctest.h>

#include "dataserver/store_fixture.h"
#include "transfer/rdma/rdma_responder.h"
#include "transfer/rdma/rdma_transport.h"
#include "transfer/rdma/verbs_fake.h"
#include "transfer/tcp_transport.h"

using namespace mc;
using namespace mc::transfer;
using mc::transfer::testing::Store;

namespace {

struct RdmaStore {
  FakeFabric fabric;
  FakeVerbs verbs{&fabric};
  std::unique_ptr<RdmaResponder> responder;
  Store store;

  explicit RdmaStore(const std::string& token = "") {
    fabric.AddDevice("s0");
    fabric.AddDevice("c0");
    // The responder registers the data server's segment, as the store does.
    TcpDataServerOptions o;
    o.auth_token = token;
    store = Store::Make(4 << 20, AllowAll(), o);
    auto devs = OpenDevices(verbs, "s0");
    REQUIRE(devs.ok());
    auto r = RdmaResponder::Create(std::move(*devs), "seg", store.segment->base(), 4 << 20);
    REQUIRE(r.ok());
    responder = std::move(*r);
  }
};

}  // namespace

TEST_CASE("a client reaches a store's segment over RDMA through its data port") {
  // The server must know the responder before it serves: restart it with one.
  FakeFabric fabric;
  fabric.AddDevice("s0");
  fabric.AddDevice("c0");
  FakeVerbs verbs(&fabric);
  auto seg = Segment::Create({.size_bytes = 4 << 20, .backing = SegmentBacking::kMemfd});
  REQUIRE(seg.ok());
  auto devs = OpenDevices(verbs, "s0");
  REQUIRE(devs.ok());
  auto resp = RdmaResponder::Create(std::move(*devs), "seg", (*seg)->base(), 4 << 20);
  REQUIRE(resp.ok());
  for (const std::string token : {"", "sekrit"}) {
    CAPTURE(token);
    TcpDataServerOptions o;
    o.listen_host = "127.0.0.1";
    o.auth_token = token;
    o.rdma = resp->get();
    auto srv = TcpDataServer::Start((*seg)->base(), 4 << 20, AllowAll(), o);
    REQUIRE(srv.ok());
    Endpoint ep{"127.0.0.1", (*srv)->port(), ""};
    auto t = RdmaTransport::Create({.devices = "c0", .auth_token = token}, &verbs);
    REQUIRE(t.ok());
    std::vector<uint8_t> data(300 << 10);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + token.size());
    REQUIRE((*t)->Write(ep, 4096, data.data(), data.size()).ok());
    CHECK(std::equal(data.begin(), data.end(), (*seg)->base() + 4096));
    std::vector<uint8_t> back(data.size());
    REQUIRE((*t)->Read(ep, 4096, back.data(), back.size()).ok());
    CHECK(back == data);
    CHECK((*srv)->stats().rdma_connects == 1);
    CHECK((*srv)->stats().requests_served == 0);  // no byte over TCP
    CHECK(fabric.posts("c0") > 0);
    CHECK(resp->get()->qp_count() == 2);
    t->reset();  // the client goes: its data-port connection closes
    (*srv)->Stop();
    CHECK(resp->get()->qp_count() == 0);  // ... and the store's QPs with it
  }
}

TEST_CASE("without the token a peer gets no descriptor and no QPs") {
  RdmaStore s("sekrit");
  // (s.store's server has no responder; build one that has.)
  TcpDataServerOptions o;
  o.listen_host = "127.0.0.1";
  o.auth_token = "sekrit";
  o.rdma = s.responder.get();
  auto srv = TcpDataServer::Start(s.store.segment->base(), 4 << 20, AllowAll(), o);
  REQUIRE(srv.ok());
  Endpoint ep{"127.0.0.1", (*srv)->port(), ""};
  auto t = RdmaTransport::Create({.devices = "c0", .auth_token = "wrong"}, &s.verbs);
  REQUIRE(t.ok());
  uint8_t b = 1;
  Status st = (*t)->Write(ep, 0, &b, 1);
  CHECK(st.code() == ErrorCode::AUTH_FAILED);
  CHECK(s.responder->qp_count() == 0);
  CHECK(s.fabric.posts("c0") == 0);
}

TEST_CASE("a store without RDMA answers NOT_SUPPORTED and keeps serving TCP") {
  RdmaStore s;  // s.store's data server has no responder
  auto t = RdmaTransport::Create({.devices = "c0"}, &s.verbs);
  REQUIRE(t.ok());
  uint8_t b = 1;
  CHECK((*t)->Write(s.store.endpoint, 0, &b, 1).code() == ErrorCode::NOT_SUPPORTED);
  TcpTransport tcp;
  CHECK(tcp.Write(s.store.endpoint, 0, &b, 1).ok());
  CHECK(s.store.segment->base()[0] == 1);
}

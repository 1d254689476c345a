// The RPC server and MasterClient over TLS (net/tls.h): the non-blocking
// SSL path of the epoll loops, and the errors each side gives a peer that
// does not speak TLS.
#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "net/tls.h"
#include "net/tls_testing.h"
#include "rpc/client.h"
#include "rpc/server.h"
#include "rpc/testing.h"

namespace mc::rpc {
namespace {

using net::testing::TestPki;
using proto::Opcode;

class ExistHandler : public testing::ElementwiseHandler {
 public:
  Result<msg::PingReply> Ping(const msg::PingRequest&) override { return msg::PingReply{false, 1}; }
  Result<bool> ExistKey(const msg::KeyRequest& r) override { return r.key.size() % 2 == 0; }
};

std::shared_ptr<net::TlsContext> Ctx(const net::TlsSettings& s, net::TlsRole role) {
  auto c = net::TlsContext::Create(s, role);
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  return *c;
}

struct TlsServer {
  TlsServer(std::shared_ptr<net::TlsContext> tls) {
    ServerOptions o;
    o.address = "127.0.0.1";
    o.port = 0;
    o.tls = std::move(tls);
    server = std::make_unique<Server>(o, &handler);
    REQUIRE(server->Start().ok());
  }
  ClientOptions Client(std::shared_ptr<net::TlsContext> tls) const {
    ClientOptions o;
    o.master = "127.0.0.1:" + std::to_string(server->port());
    o.rpc_timeout_us = 10000000;
    o.retries = 2;
    o.initial_backoff_us = 1000;
    o.tls = std::move(tls);
    return o;
  }
  // Stats move after the reply the client saw: wait for them (bounded).
  uint64_t TlsFailures(uint64_t want) const {
    for (int i = 0; i < 5000 && server->stats().tls_failures < want; ++i) ::usleep(1000);
    return server->stats().tls_failures;
  }
  ExistHandler handler;
  std::unique_ptr<Server> server;
};

net::TlsSettings ServerSide(const TestPki& p) { return {p.cert, p.key, p.ca, false, "1.3"}; }
net::TlsSettings ClientSide(const TestPki& p) { return {"", "", p.ca, false, "1.3"}; }

TEST_CASE("TLS clients on several threads call a TLS master with small and megabyte frames") {
  TestPki pki = net::testing::MakeTestPki();
  TlsServer ts(Ctx(ServerSide(pki), net::TlsRole::kServer));
  MasterClient c(ts.Client(Ctx(ClientSide(pki), net::TlsRole::kClient)));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        if (!c.Invoke<Opcode::kPing>({{1, 2}}).ok()) ++failures;
      }
      // About 1 MiB each way: many TLS records in one frame.
      msg::Batch<msg::KeyRequest> big;
      for (int k = 0; k < 8000 + t; ++k) big.push_back({{1, 2}, std::string(100 + (k % 2), 'k')});
      auto r = c.Invoke<Opcode::kBatchExistKey>(big);
      if (!r.ok() || r->size() != big.size()) {
        ++failures;
        return;
      }
      for (size_t k = 0; k < big.size(); ++k) {
        if (!(*r)[k].status.ok() || (*r)[k].value != (k % 2 == 0)) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures.load() == 0);
  CHECK(ts.server->stats().tls_failures == 0);
  net::testing::RemoveTestPki(pki);
}

TEST_CASE("a plaintext client of a TLS master is told TLS is required, and the master counts it") {
  TestPki pki = net::testing::MakeTestPki();
  TlsServer ts(Ctx(ServerSide(pki), net::TlsRole::kServer));
  MasterClient c(ts.Client(nullptr));
  auto r = c.Invoke<Opcode::kPing>({{1, 2}});
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == ErrorCode::PROTOCOL_ERROR);
  CHECK_MESSAGE(r.status().message().find("this master requires TLS") != std::string::npos,
                r.status().message());
  CHECK(ts.TlsFailures(1) == 1);  // refused once: PROTOCOL_ERROR is not retried
  net::testing::RemoveTestPki(pki);
}

TEST_CASE("a TLS client of a plaintext master fails at once saying the master does not speak TLS") {
  TestPki pki = net::testing::MakeTestPki();
  TlsServer ts(nullptr);
  MasterClient c(ts.Client(Ctx(ClientSide(pki), net::TlsRole::kClient)));
  auto r = c.Invoke<Opcode::kPing>({{1, 2}});
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == ErrorCode::PROTOCOL_ERROR);
  CHECK_MESSAGE(r.status().message().find("does not speak TLS") != std::string::npos,
                r.status().message());
  CHECK(ts.TlsFailures(1) == 1);  // the master logged a TLS client it cannot serve
  net::testing::RemoveTestPki(pki);
}

TEST_CASE("a mutual-TLS master refuses a client without a certificate and serves one with") {
  TestPki pki = net::testing::MakeTestPki();
  net::TlsSettings ss = ServerSide(pki);
  ss.verify_peer = true;
  TlsServer ts(Ctx(ss, net::TlsRole::kServer));
  MasterClient anonymous(ts.Client(Ctx(ClientSide(pki), net::TlsRole::kClient)));
  auto r = anonymous.Invoke<Opcode::kPing>({{1, 2}});
  REQUIRE_FALSE(r.ok());
  CHECK_MESSAGE(r.status().message().find("requires a client certificate") != std::string::npos,
                r.status().message());
  CHECK(ts.TlsFailures(1) >= 1);
  MasterClient with_cert(ts.Client(Ctx({pki.client_cert, pki.client_key, pki.ca, false, "1.3"},
                                       net::TlsRole::kClient)));
  CHECK(with_cert.Invoke<Opcode::kPing>({{1, 2}}).ok());
  net::testing::RemoveTestPki(pki);
}

}  // namespace
}  // namespace mc::rpc

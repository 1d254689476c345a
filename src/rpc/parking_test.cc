#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <future>
#include <thread>

#include "common/clock.h"
#include "net/socket.h"
#include "rpc/client.h"
#include "rpc/parking.h"
#include "rpc/server.h"
#include "rpc/testing.h"

using namespace mc;
using namespace mc::rpc;

namespace {

// Ping parks until `ready`; the reply says how the last call went (term 1:
// answered ready, 2: answered due). ExistKey never parks.
class ParkingHandler : public testing::RefusingHandler {
 public:
  Result<msg::PingReply> Ping(const msg::PingRequest&) override {
    ++calls;
    if (ready.load()) return msg::PingReply{false, 0, 1};
    const ParkAnswer a = ParkCall(wait_us);
    if (a == ParkAnswer::kParked) return Error(ErrorCode::INTERNAL_ERROR, "dropped by the server");
    return msg::PingReply{false, 0, a == ParkAnswer::kDue ? 2u : 3u};
  }
  Result<bool> ExistKey(const msg::KeyRequest&) override { return true; }
  std::atomic<bool> ready{false};
  std::atomic<int> calls{0};
  uint64_t wait_us = 10'000'000;
};

template <typename F>
bool WaitUntil(F cond) {
  const uint64_t deadline = net::MonotonicUs() + 5'000'000;
  while (!cond()) {
    if (net::MonotonicUs() > deadline) return false;
    ::usleep(1000);  // waiting on another thread's I/O, not on simulated time
  }
  return true;
}

struct Fixture {
  explicit Fixture(bool with_lot = true) {
    ServerOptions o;
    o.address = "127.0.0.1";
    o.port = 0;
    o.clock = &clock;
    o.parking = with_lot ? &own_lot : nullptr;
    server = std::make_unique<Server>(o, &handler);
    REQUIRE(server->Start().ok());
    ClientOptions c;
    c.master = "127.0.0.1:" + std::to_string(server->port());
    c.rpc_timeout_us = 20'000'000;  // longer than any wait below
    client = std::make_unique<MasterClient>(c);
  }
  std::future<Result<msg::PingReply>> PingLater() {
    return std::async(std::launch::async,
                      [this] { return client->Invoke<proto::Opcode::kPing>(msg::PingRequest{}); });
  }
  ManualClock clock;
  ParkingLot own_lot;
  ParkingHandler handler;
  std::unique_ptr<Server> server;
  std::unique_ptr<MasterClient> client;
};

}  // namespace

TEST_CASE("a parked call is answered once its parking lot is woken") {
  Fixture f;
  auto ping = f.PingLater();
  REQUIRE(WaitUntil([&] { return f.server->stats().parked == 1; }));
  // The connection still serves: another call on another connection.
  CHECK(f.client->Invoke<proto::Opcode::kExistKey>(msg::KeyRequest{}).value());
  f.handler.ready = true;
  f.own_lot.Wake();
  auto r = ping.get();
  REQUIRE(r.ok());
  CHECK(r->term == 1);
  CHECK(f.handler.calls == 2);
}

TEST_CASE("a woken call that parks again keeps waiting, and is due at its first deadline") {
  Fixture f;
  auto ping = f.PingLater();
  REQUIRE(WaitUntil([&] { return f.server->stats().parked == 1; }));
  f.own_lot.Wake();  // nothing changed for it: it parks again
  REQUIRE(WaitUntil([&] { return f.handler.calls == 2; }));
  CHECK(ping.wait_for(std::chrono::milliseconds(0)) == std::future_status::timeout);
  f.clock.AdvanceUs(f.handler.wait_us);  // the server checks deadlines at least every 50 ms
  auto r = ping.get();
  REQUIRE(r.ok());
  CHECK(r->term == 2);
  CHECK(f.handler.calls == 3);
  CHECK(f.server->stats().parked == 1);
}

TEST_CASE("without a parking lot a call cannot park and is answered at once") {
  Fixture f(false);
  auto r = f.client->Invoke<proto::Opcode::kPing>(msg::PingRequest{});
  REQUIRE(r.ok());
  CHECK(r->term == 3);
  CHECK(f.server->stats().parked == 0);
  CHECK(ParkCall(1000) == ParkAnswer::kUnavailable);  // not inside a server either
}

TEST_CASE("a parked call whose client went away is dropped, not answered") {
  Fixture f;
  {
    ClientOptions c;
    c.master = "127.0.0.1:" + std::to_string(f.server->port());
    c.rpc_timeout_us = 200'000;  // gives up long before the call is due
    MasterClient impatient(c);
    CHECK(!impatient.Invoke<proto::Opcode::kPing>(msg::PingRequest{}).ok());
  }
  REQUIRE(WaitUntil([&] { return f.server->stats().active == 0; }));
  f.handler.ready = true;
  f.own_lot.Wake();
  f.clock.AdvanceUs(f.handler.wait_us);
  // The server lives on and serves the next call; the dropped one was not called again.
  auto r = f.client->Invoke<proto::Opcode::kPing>(msg::PingRequest{});
  REQUIRE(r.ok());
  CHECK(r->term == 1);
  CHECK(f.handler.calls == 2);
}

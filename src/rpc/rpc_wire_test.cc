// Authentication, framing and limits on the wire: what a hostile or broken peer gets.
#include <doctest/doctest.h>

#include "rpc/rpc_test_util.h"

TEST_CASE("the right token is accepted, none or a wrong one is refused with AUTH_FAILED") {
  TestServer ts("s3cret");
  CHECK(MasterClient(ts.Client("s3cret")).Invoke<Opcode::kPing>({})->view_version == 42);

  auto none = MasterClient(ts.Client("")).Invoke<Opcode::kPing>({});
  CHECK(none.code() == ErrorCode::AUTH_FAILED);
  CHECK(Contains(none.status().message(), "requires an auth token"));
  CHECK(Contains(none.status().message(), ts.address()));

  auto wrong = MasterClient(ts.Client("guess")).Invoke<Opcode::kPing>({});
  CHECK(wrong.code() == ErrorCode::AUTH_FAILED);
  CHECK(Contains(wrong.status().message(), "wrong auth token"));
  CHECK(ts.server->stats().auth_failures == 2);

  // Skipping the handshake does not help.
  Raw raw(ts.address());
  raw.SendFrame(Opcode::kPing, 1, std::string(16, '\0'));
  auto f = raw.Read();
  REQUIRE(f.ok());
  CHECK(ReplyStatus(f->second).code() == ErrorCode::AUTH_FAILED);
  CHECK(raw.ClosedByPeer());
}

TEST_CASE("a client with a token refuses a master that cannot prove it knows it") {
  TestServer ts("");  // no token: nothing to prove
  auto r = MasterClient(ts.Client("s3cret")).Invoke<Opcode::kPing>({});
  CHECK(r.code() == ErrorCode::AUTH_FAILED);
  CHECK(Contains(r.status().message(), "cannot prove"));
}

TEST_CASE("the auth token never appears on the wire") {
  const std::string token = "TOKEN-must-not-leak-0123456789";
  TestServer ts(token);
  // A one-connection proxy that records both directions.
  auto lfd = net::ListenTcp("127.0.0.1", 0, 4);
  REQUIRE(lfd.ok());
  uint16_t proxy_port = net::LocalPort(*lfd);
  std::string captured;
  std::thread proxy([&] {
    pollfd lp{*lfd, POLLIN, 0};
    if (::poll(&lp, 1, 3000) <= 0) return;
    int a = ::accept(*lfd, nullptr, nullptr);
    int b = *net::ConnectTcp(*net::ParseHostPort(ts.address()), 2000000);
    pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    char buf[4096];
    for (bool open = true; open && ::poll(p, 2, 3000) > 0;) {
      for (int i = 0; i < 2; ++i) {
        if (!(p[i].revents & (POLLIN | POLLHUP))) continue;
        ssize_t n = ::read(p[i].fd, buf, sizeof buf);
        if (n <= 0) { open = false; break; }
        captured.append(buf, n);
        (void)net::WriteAll(p[1 - i].fd, std::string_view(buf, n), net::MonotonicUs() + 1000000);
      }
    }
    ::close(a);
    ::close(b);
  });
  {
    ClientOptions o = ts.Client(token);
    o.master = "127.0.0.1:" + std::to_string(proxy_port);
    MasterClient c(o);
    REQUIRE(c.Invoke<Opcode::kPing>({})->view_version == 42);
    REQUIRE(c.Invoke<Opcode::kExistKey>({{}, "some-key"}).ok());
  }
  proxy.join();
  ::close(*lfd);
  CHECK(Contains(captured, "some-key"));  // the capture did see the traffic
  CHECK_FALSE(Contains(captured, token));
  CHECK_FALSE(Contains(captured, "TOKEN"));
}

TEST_CASE("a wrong protocol version gets an error naming both versions, then a close") {
  TestServer ts;
  Raw raw(ts.address());
  raw.SendFrame(Opcode::kHello, 0, std::string(kNonceBytes, 'n'), /*version=*/9);
  auto f = raw.Read();
  REQUIRE(f.ok());
  Status st = ReplyStatus(f->second);
  CHECK(st.code() == ErrorCode::PROTOCOL_ERROR);
  CHECK(st.message() == "protocol version mismatch: client speaks version 9, server speaks version 1");
  CHECK(raw.ClosedByPeer());
}

TEST_CASE("bad framing gets a ConnectionError and a close; bad payloads only an error reply") {
  TestServer ts;
  SUBCASE("wrong magic") {
    Raw raw(ts.address());
    raw.Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    auto f = raw.Read();
    REQUIRE(f.ok());
    CHECK(f->first.opcode == Opcode::kConnectionError);
    CHECK(Contains(ReplyStatus(f->second).message(), "bad frame magic"));
    CHECK(raw.ClosedByPeer());
  }
  SUBCASE("a length past the limit before the handshake") {
    Raw raw(ts.address());
    raw.SendFrame(Opcode::kHello, 0, std::string(kMaxHandshakePayloadBytes + 1, 'x'));
    auto f = raw.Read();
    REQUIRE(f.ok());
    CHECK(Contains(ReplyStatus(f->second).message(), "exceeds the limit of 1024"));
    CHECK(raw.ClosedByPeer());
  }
  SUBCASE("a length past the limit after the handshake") {
    Raw raw(ts.address());
    raw.Handshake();
    std::string h(kFrameHeaderBytes, '\0');
    EncodeFrameHeader({kProtocolVersion, 0, Opcode::kPing, kMaxPayloadBytes + 1, 5},
                      reinterpret_cast<uint8_t*>(h.data()));
    raw.Send(h);
    auto f = raw.Read();
    REQUIRE(f.ok());
    CHECK(ReplyStatus(f->second).code() == ErrorCode::PROTOCOL_ERROR);
    CHECK(raw.ClosedByPeer());
  }
  SUBCASE("unknown opcodes and undecodable payloads keep the connection") {
    Raw raw(ts.address());
    raw.Handshake();
    raw.SendFrame(static_cast<Opcode>(0x7777), 11, "whatever");
    raw.SendFrame(Opcode::kExistKey, 12, "short");
    std::string ping;
    EncodePayload(msg::PingRequest{}, &ping);
    raw.SendFrame(Opcode::kPing, 13, ping);
    auto a = raw.Read(), b = raw.Read(), c = raw.Read();
    REQUIRE((a.ok() && b.ok() && c.ok()));
    CHECK(a->first.request_id == 11);
    CHECK(ReplyStatus(a->second).message() == "unknown opcode 0x7777");
    CHECK(ReplyStatus(a->second).code() == ErrorCode::NOT_SUPPORTED);
    CHECK(ReplyStatus(b->second).code() == ErrorCode::PROTOCOL_ERROR);
    CHECK(Contains(ReplyStatus(b->second).message(), "malformed ExistKey"));
    CHECK(c->first.request_id == 13);
    CHECK(DecodeReply<msg::PingReply>(c->second, "ping")->view_version == 42);
  }
  SUBCASE("a truncated frame and a hang-up") {
    {
      Raw raw(ts.address());
      raw.Handshake();
      raw.Send(std::string("MCRP\x01\x00\x12\x00", 8));
    }
    CHECK(WaitUntil([&] { return ts.Idle(); }));
  }
  CHECK(WaitUntil([&] { return ts.Idle(); }));
  CHECK(MasterClient(ts.Client()).Invoke<Opcode::kPing>({}).ok());  // still serving
}

TEST_CASE("random bytes never crash the server or stop it serving (MC_SEED replays)") {
  TestServer ts;
  uint64_t seed = mc::TestSeed("rpc random-bytes");
  RandomMessages g(seed);
  MasterClient good(ts.Client());
  for (int i = 0; i < 60; ++i) {
    Raw raw(ts.address());
    if (g.Bool()) raw.Handshake();
    std::string junk;
    // Noise, or a valid header with noise after it, or a valid frame with a
    // flipped byte.
    size_t kind = g.Pick(3);
    if (kind > 0) {
      std::string h(kFrameHeaderBytes, '\0');
      uint16_t op = static_cast<uint16_t>(g.Pick(0x50));
      std::string body = g.Str();
      EncodeFrameHeader({kProtocolVersion, 0, static_cast<Opcode>(op), static_cast<uint32_t>(body.size()), g.U64()},
                        reinterpret_cast<uint8_t*>(h.data()));
      junk = h + body;
      if (kind == 2) junk[g.Pick(junk.size())] ^= static_cast<char>(1 + g.Pick(255));
    } else {
      junk = g.Str();
    }
    raw.Send(junk);
    (void)raw.Read(20);  // whatever comes back, if anything
    REQUIRE(good.Invoke<Opcode::kPing>({}).ok());
  }
  CHECK(WaitUntil([&] { return ts.server->stats().active <= 1; }));
}

TEST_CASE("a half-sent frame is cut off when the frame timeout passes (slowloris)") {
  ManualClock clock;
  TestServer ts("", &clock);
  Raw raw(ts.address());
  raw.Handshake();
  raw.Send(std::string("MCRP\x01\x00\x12\x00", 8));  // half a header, then silence
  // Hello (20 + 32) + Auth (20 + 1) + the 8 bytes: the server has seen them.
  CHECK(WaitUntil([&] { return ts.server->stats().bytes_received == 81; }));
  clock.AdvanceUs(ServerOptions{}.frame_timeout_us + 1);
  CHECK(raw.ClosedByPeer());
  CHECK(ts.server->stats().timeouts == 1);

  Raw silent(ts.address());  // connects and never says Hello
  CHECK(WaitUntil([&] { return ts.server->stats().accepted == 2; }));
  clock.AdvanceUs(ServerOptions{}.handshake_timeout_us + 1);
  CHECK(silent.ClosedByPeer());
  CHECK(MasterClient(ts.Client()).Invoke<Opcode::kPing>({}).ok());
}

TEST_CASE("connections past the limit are refused with a reason") {
  TestHandler h;
  ServerOptions so;
  so.address = "127.0.0.1";
  so.port = 0;
  so.max_connections = 2;
  Server s(so, &h);
  REQUIRE(s.Start().ok());
  std::string addr = "127.0.0.1:" + std::to_string(s.port());
  Raw a(addr), b(addr);
  CHECK(WaitUntil([&] { return s.stats().active == 2; }));
  Raw c(addr);
  auto f = c.Read();
  REQUIRE(f.ok());
  CHECK(Contains(ReplyStatus(f->second).message(), "too many connections (limit 2)"));
  CHECK(s.stats().refused == 1);
}

TEST_CASE("a batch at the wire limit (65536 keys, about 8 MiB) goes through in one frame") {
  TestServer ts;
  ClientOptions o = ts.Client();
  // Not a timing test: 65536 keys each way take seconds under the
  // sanitizers on a loaded machine, more than the usual 3 s.
  o.rpc_timeout_us = 60000000;
  MasterClient c(o);
  msg::Batch<msg::KeyRequest> keys;
  for (size_t i = 0; i < kMaxBatchItems; ++i) keys.push_back({{}, std::string(100, 'k') + std::to_string(i)});
  auto r = c.Invoke<Opcode::kBatchExistKey>(keys);
  REQUIRE(r.ok());
  CHECK(r->size() == kMaxBatchItems);
  keys.push_back({{}, "one too many"});
  auto over = c.Invoke<Opcode::kBatchExistKey>(keys);
  CHECK(over.code() == ErrorCode::PROTOCOL_ERROR);
  CHECK(Contains(over.status().message(), "more items than the limit"));
  CHECK(c.Invoke<Opcode::kPing>({}).ok());  // the connection survived the refused batch
}

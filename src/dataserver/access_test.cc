// The store's capability check on the TCP data path and the same-host
// client's grant check: what the master did not grant is refused, what it
// granted (including striped pieces of one buffer) goes through.
#include "transfer/access.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstring>

#include "common/capability.h"
#include "dataserver/store_fixture.h"
#include "transfer/shm_transport.h"
#include "transfer/tcp_transport.h"

using namespace mc::transfer;
using mc::CapabilityGrant;
using mc::CapabilityOp;
using mc::ErrorCode;
using mc::transfer::testing::RandomBytes;
using mc::transfer::testing::Store;
using mc::transfer::testing::TestSeed;

namespace {

constexpr uint64_t kIncarnation = 42;
const std::string kKey(32, 'k');
constexpr uint64_t kSegmentBytes = 16 << 20;

// A store whose data server checks capabilities against kKey on a clock the
// test moves by hand.
struct GrantedStore {
  std::shared_ptr<std::atomic<uint64_t>> now_ms = std::make_shared<std::atomic<uint64_t>>(1000000);
  Store store;
  GrantedStore()
      : store(Store::Make(kSegmentBytes,
                          CapabilityCheck(kKey, kIncarnation, [n = now_ms] { return n->load(); }))) {}
};

// What the master would hand out for [offset, offset + size).
Grant Sign(CapabilityOp op, uint64_t offset, uint64_t size, uint64_t expiry,
           const std::string& key = kKey, uint64_t incarnation = kIncarnation) {
  CapabilityGrant g{op, incarnation, offset, size, expiry};
  return Grant{offset, size, expiry, mc::SignCapability(key, g)};
}

}  // namespace

TEST_CASE("a striped transfer inside its grant is served; each piece checks against the grant") {
  std::mt19937_64 rng(TestSeed() + 40);
  GrantedStore gs;
  TcpTransportOptions topts;
  topts.streams = 4;
  topts.min_chunk_bytes = 64 << 10;  // 4 MiB becomes several pieces on 4 connections
  TcpTransport tcp(topts);
  const uint64_t off = 3 << 20, len = 4 << 20;
  auto data = RandomBytes(rng, len);
  Grant w = Sign(CapabilityOp::kWrite, off, len, 1000000 + 5000);
  REQUIRE(tcp.Write(gs.store.endpoint, off, data.data(), len, w).ok());
  CHECK(std::memcmp(gs.store.segment->base() + off, data.data(), len) == 0);
  Grant r = Sign(CapabilityOp::kRead, off, len, 1000000 + 5000);
  std::vector<uint8_t> back(len);
  REQUIRE(tcp.Read(gs.store.endpoint, off, back.data(), len, r).ok());
  CHECK(back == data);
  // A sub-range of the grant is fine too (e.g. one stripe of it).
  std::vector<uint8_t> part(1000);
  REQUIRE(tcp.Read(gs.store.endpoint, off + 12345, part.data(), part.size(), r).ok());
  CHECK(std::memcmp(part.data(), data.data() + 12345, part.size()) == 0);
  CHECK(gs.store.server->stats().requests_refused == 0);
  CHECK(gs.store.server->stats().requests_served > 2);  // striped into several requests
}

TEST_CASE("the store refuses transfers the master did not grant, and keeps serving") {
  std::mt19937_64 rng(TestSeed() + 41);
  GrantedStore gs;
  TcpTransport tcp;
  const uint64_t off = 1 << 20, len = 300000, expiry = 1000000 + 5000;
  auto data = RandomBytes(rng, len);
  std::vector<uint8_t> back(len);
  std::memset(gs.store.segment->base(), 0, kSegmentBytes);
  const Endpoint& ep = gs.store.endpoint;

  SUBCASE("no grant at all") {
    CHECK(tcp.Write(ep, off, data.data(), len).code() == ErrorCode::INVALID_WRITE);
    CHECK(tcp.Read(ep, off, back.data(), len).code() == ErrorCode::INVALID_READ);
  }
  SUBCASE("a forged signature") {
    Grant g = Sign(CapabilityOp::kWrite, off, len, expiry);
    g.signature[0] ^= 1;
    auto st = tcp.Write(ep, off, data.data(), len, g);
    CHECK(st.code() == ErrorCode::INVALID_WRITE);
    CHECK(st.message().find("valid grant") != std::string::npos);
  }
  SUBCASE("signed with another key") {
    Grant g = Sign(CapabilityOp::kWrite, off, len, expiry, std::string(32, 'x'));
    CHECK(tcp.Write(ep, off, data.data(), len, g).code() == ErrorCode::INVALID_WRITE);
  }
  SUBCASE("a grant of an earlier incarnation of the store") {
    Grant g = Sign(CapabilityOp::kWrite, off, len, expiry, kKey, kIncarnation - 1);
    CHECK(tcp.Write(ep, off, data.data(), len, g).code() == ErrorCode::INVALID_WRITE);
  }
  SUBCASE("a read grant used to write, a write grant used to read") {
    CHECK(tcp.Write(ep, off, data.data(), len, Sign(CapabilityOp::kRead, off, len, expiry))
              .code() == ErrorCode::INVALID_WRITE);
    CHECK(tcp.Read(ep, off, back.data(), len, Sign(CapabilityOp::kWrite, off, len, expiry))
              .code() == ErrorCode::INVALID_READ);
  }
  SUBCASE("a grant whose range was enlarged by the client") {
    Grant g = Sign(CapabilityOp::kWrite, off, len, expiry);
    g.size_bytes += 4096;
    CHECK(tcp.Write(ep, off, data.data(), len, g).code() == ErrorCode::INVALID_WRITE);
  }
  SUBCASE("outside the granted range") {
    Grant g = Sign(CapabilityOp::kWrite, off, len, expiry);
    auto st = tcp.Write(ep, off + 1, data.data(), len, g);  // one byte past the end
    CHECK(st.code() == ErrorCode::INVALID_WRITE);
    CHECK(st.message().find("outside the granted buffer") != std::string::npos);
    CHECK(tcp.Write(ep, off - 4096, data.data(), 4096, g).code() == ErrorCode::INVALID_WRITE);
  }
  SUBCASE("expired") {
    Grant g = Sign(CapabilityOp::kRead, off, len, expiry);
    gs.now_ms->store(expiry);  // expired at the expiry instant itself
    auto st = tcp.Read(ep, off, back.data(), len, g);
    CHECK(st.code() == ErrorCode::INVALID_READ);
    CHECK(st.message().find("expired") != std::string::npos);
  }
  // Nothing landed, and the same connection still serves a granted transfer.
  CHECK(gs.store.segment->base()[off] == 0);
  CHECK(gs.store.segment->base()[off + len - 1] == 0);
  auto before = gs.store.server->stats();
  CHECK(before.requests_refused >= 1);
  gs.now_ms->store(1000000);
  REQUIRE(tcp.Write(ep, off, data.data(), len, Sign(CapabilityOp::kWrite, off, len, expiry)).ok());
  CHECK(std::memcmp(gs.store.segment->base() + off, data.data(), len) == 0);
  CHECK(gs.store.server->stats().connections_accepted == before.connections_accepted);
}

TEST_CASE("the same-host path copies only inside an unexpired grant") {
  GrantedStore gs;  // used for its segment file only
  uint64_t now = 1000000;
  ShmTransportOptions opts;
  opts.check = GrantBoundsCheck([&now] { return now; });
  ShmTransport shm(opts);
  const Endpoint& ep = gs.store.endpoint;
  std::vector<uint8_t> buf(4096, 7);
  std::memset(gs.store.segment->base(), 0, 3 * 4096);
  Grant w = Sign(CapabilityOp::kWrite, 4096, 4096, now + 100);
  CHECK(shm.Write(ep, 4096, buf.data(), 4096).code() == ErrorCode::INVALID_WRITE);  // no grant
  CHECK(shm.Write(ep, 4097, buf.data(), 4096, w).code() == ErrorCode::INVALID_WRITE);
  // (Which op a grant is for is bound only by its signature, which the
  // same-host client cannot check: the store's key is not given to it.)
  CHECK(gs.store.segment->base()[2 * 4096] == 0);
  REQUIRE(shm.Write(ep, 4096, buf.data(), 2048, w).ok());  // a sub-range of the grant
  CHECK(gs.store.segment->base()[4096] == 7);
  now += 100;
  CHECK(shm.Write(ep, 4096, buf.data(), 4096, w).code() == ErrorCode::INVALID_WRITE);
}

TEST_CASE("a store that takes a new key and incarnation voids every grant signed before") {
  std::mt19937_64 rng(TestSeed() + 42);
  auto keys = std::make_shared<SegmentKeys>(kKey, kIncarnation);
  Store store = Store::Make(kSegmentBytes, CapabilityCheck(keys, [] { return uint64_t{1000000}; }));
  TcpTransport tcp;
  const Endpoint& ep = store.endpoint;
  const uint64_t off = 2 << 20, len = 100000, expiry = 1000000 + 5000;
  auto data = RandomBytes(rng, len);
  std::vector<uint8_t> back(len);
  Grant old_write = Sign(CapabilityOp::kWrite, off, len, expiry);
  Grant old_read = Sign(CapabilityOp::kRead, off, len, expiry);
  REQUIRE(tcp.Write(ep, off, data.data(), len, old_write).ok());

  // Declared dead and mounting again: a stale put's grant must not write
  // into space the master may hand out anew, nor a stale lease read it.
  const std::string new_key(32, 'n');
  keys->Set(new_key, kIncarnation + 1);
  auto fresh = RandomBytes(rng, len);
  CHECK(tcp.Write(ep, off, fresh.data(), len, old_write).code() == ErrorCode::INVALID_WRITE);
  CHECK(tcp.Read(ep, off, back.data(), len, old_read).code() == ErrorCode::INVALID_READ);
  CHECK(std::memcmp(store.segment->base() + off, data.data(), len) == 0);
  // The same key under the new incarnation is refused too: the incarnation is signed.
  CHECK(tcp.Write(ep, off, fresh.data(), len,
                  Sign(CapabilityOp::kWrite, off, len, expiry, kKey, kIncarnation + 1))
            .code() == ErrorCode::INVALID_WRITE);
  // Grants of the new pair are served, on the same running server.
  REQUIRE(tcp.Write(ep, off, fresh.data(), len,
                    Sign(CapabilityOp::kWrite, off, len, expiry, new_key, kIncarnation + 1))
              .ok());
  REQUIRE(tcp.Read(ep, off, back.data(), len,
                   Sign(CapabilityOp::kRead, off, len, expiry, new_key, kIncarnation + 1))
              .ok());
  CHECK(back == fresh);
}

TEST_CASE("the data port closes on a malformed header and refuses a range past the segment") {
  const AccessCheck allow = AllowAll();
  wire::Request req;
  req.op = 9;
  RequestVerdict v = ScreenRequest(req, 4096, 1 << 20, allow);
  CHECK(v.action == RequestVerdict::Action::kClose);
  CHECK(v.status.code() == ErrorCode::PROTOCOL_ERROR);

  req.op = static_cast<uint16_t>(wire::Op::kWrite);
  req.length = (1 << 20) + 1;
  v = ScreenRequest(req, 4096, 1 << 20, allow);
  CHECK(v.action == RequestVerdict::Action::kClose);

  // offset + length would wrap around 2^64: still outside, never served.
  req.offset = ~uint64_t{0} - 1;
  req.length = 4;
  v = ScreenRequest(req, 4096, 1 << 20, allow);
  CHECK(v.action == RequestVerdict::Action::kRefuse);
  CHECK(v.status.code() == ErrorCode::INVALID_WRITE);

  req.op = static_cast<uint16_t>(wire::Op::kRead);
  req.offset = 4092;
  v = ScreenRequest(req, 4096, 1 << 20, allow);
  CHECK(v.action == RequestVerdict::Action::kServe);
  CHECK(v.op == OpKind::kRead);
  req.offset = 4093;
  v = ScreenRequest(req, 4096, 1 << 20, allow);
  CHECK(v.action == RequestVerdict::Action::kRefuse);
  CHECK(v.status.code() == ErrorCode::INVALID_READ);
}

// The store's term fence on the TCP data path: after an HA failover the
// grants of the deposed leader stop working at the first grant (or Ping) of
// the new one, so an old writer cannot overwrite space the new leader handed
// to another object.
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <memory>

#include "common/capability.h"
#include "dataserver/store_fixture.h"
#include "transfer/access.h"
#include "transfer/tcp_transport.h"
#include "transfer/term_fence.h"

using namespace mc::transfer;
using mc::CapabilityGrant;
using mc::CapabilityOp;
using mc::ErrorCode;
using mc::transfer::testing::RandomBytes;
using mc::transfer::testing::Store;
using mc::transfer::testing::TestSeed;

namespace {

constexpr uint64_t kIncarnation = 5;
const std::string kKey(32, 'f');
constexpr uint64_t kNowMs = 2000000;
constexpr uint64_t kSegmentBytes = 4 << 20;

struct FencedStore {
  std::shared_ptr<TermFence> fence = std::make_shared<TermFence>();
  Store store;
  FencedStore() : store(Make(fence)) {}
  static Store Make(std::shared_ptr<TermFence> fence) {
    TcpDataServerOptions o;
    o.fence = std::move(fence);
    return Store::Make(kSegmentBytes, CapabilityCheck(kKey, kIncarnation, [] { return kNowMs; }),
                       std::move(o));
  }
};

// What a master leading in `term` hands out for [offset, offset + size).
Grant Signed(CapabilityOp op, uint64_t offset, uint64_t size, uint64_t term) {
  CapabilityGrant g{op, kIncarnation, offset, size, kNowMs + 60000, term};
  Grant out{offset, size, g.expiry_unix_ms, mc::SignCapability(kKey, g)};
  out.term = term;
  return out;
}

}  // namespace

TEST_CASE("a deposed leader's write grant is refused once the new leader's first write landed") {
  std::mt19937_64 rng(TestSeed() + 90);
  FencedStore fs;
  TcpTransport tcp;
  const uint64_t off = 1 << 20, len = 64 << 10;
  auto old_bytes = RandomBytes(rng, len);
  auto new_bytes = RandomBytes(rng, len);
  const Grant old_grant = Signed(CapabilityOp::kWrite, off, len, 10);
  const Grant new_grant = Signed(CapabilityOp::kWrite, off, len, 17);
  REQUIRE(tcp.Write(fs.store.endpoint, off, old_bytes.data(), len, old_grant).ok());
  REQUIRE(tcp.Write(fs.store.endpoint, off, new_bytes.data(), len, new_grant).ok());
  CHECK(fs.fence->term() == 17);
  mc::Status late = tcp.Write(fs.store.endpoint, off, old_bytes.data(), len, old_grant);
  CHECK(late.code() == ErrorCode::INVALID_WRITE);
  CHECK(late.message().find("term 10") != std::string::npos);
  CHECK(std::memcmp(fs.store.segment->base() + off, new_bytes.data(), len) == 0);
  // The store keeps serving the new term.
  std::vector<uint8_t> back(len);
  REQUIRE(tcp.Read(fs.store.endpoint, off, back.data(), len,
                   Signed(CapabilityOp::kRead, off, len, 17)).ok());
  CHECK(back == new_bytes);
}

TEST_CASE("a read grant of an older term is refused after a Ping named the new term") {
  FencedStore fs;
  TcpTransport tcp;
  const uint64_t off = 0, len = 4096;
  std::vector<uint8_t> back(len);
  REQUIRE(tcp.Read(fs.store.endpoint, off, back.data(), len,
                   Signed(CapabilityOp::kRead, off, len, 3)).ok());
  fs.fence->Raise(4);  // what SegmentHost does with a Ping reply's term
  CHECK(tcp.Read(fs.store.endpoint, off, back.data(), len,
                 Signed(CapabilityOp::kRead, off, len, 3)).code() == ErrorCode::INVALID_READ);
  CHECK(tcp.Read(fs.store.endpoint, off, back.data(), len,
                 Signed(CapabilityOp::kRead, off, len, 4)).ok());
}

TEST_CASE("a client cannot raise the fence with a term its grant was not signed for") {
  FencedStore fs;
  TcpTransport tcp;
  const uint64_t off = 8192, len = 4096;
  std::vector<uint8_t> data(len, 0x5a);
  Grant forged = Signed(CapabilityOp::kWrite, off, len, 2);
  forged.term = 1000;  // the MAC covers the term
  CHECK(tcp.Write(fs.store.endpoint, off, data.data(), len, forged).code() ==
        ErrorCode::INVALID_WRITE);
  CHECK(fs.fence->term() == 0);
  CHECK(tcp.Write(fs.store.endpoint, off, data.data(), len,
                  Signed(CapabilityOp::kWrite, off, len, 2)).ok());
}

TEST_CASE("a store without HA (every grant of term 0) serves every grant through the fence") {
  FencedStore fs;
  TcpTransport tcp;
  const uint64_t off = 0, len = 1 << 20;
  std::vector<uint8_t> data(len, 0x11), back(len);
  const Grant w = Signed(CapabilityOp::kWrite, off, len, 0);
  const Grant r = Signed(CapabilityOp::kRead, off, len, 0);
  for (int i = 0; i < 8; ++i) {
    REQUIRE(tcp.Write(fs.store.endpoint, off, data.data(), len, w).ok());
    REQUIRE(tcp.Read(fs.store.endpoint, off, back.data(), len, r).ok());
  }
  CHECK(back == data);
  CHECK(fs.store.server->stats().requests_refused == 0);
}

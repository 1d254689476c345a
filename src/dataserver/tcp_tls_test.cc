// The TCP data path over TLS: TcpTransport against TcpDataServer with
// certificates made at test time, and the errors each side gives a peer
// that does not speak TLS.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "dataserver/store_fixture.h"
#include "net/tls.h"
#include "net/tls_testing.h"
#include "transfer/tcp_transport.h"

using namespace mc::transfer;
using mc::ErrorCode;
using mc::net::TlsContext;
using mc::net::TlsRole;
using mc::net::TlsSettings;
using mc::net::testing::TestPki;
using mc::transfer::testing::RandomBytes;
using mc::transfer::testing::Store;
using mc::transfer::testing::TestSeed;

namespace {

constexpr uint64_t kSegmentBytes = 32ull << 20;

std::shared_ptr<TlsContext> Ctx(const TlsSettings& s, TlsRole role) {
  auto c = TlsContext::Create(s, role);
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  return *c;
}

Store TlsStore(const TestPki& pki) {
  TcpDataServerOptions o;
  o.tls = Ctx({pki.cert, pki.key, pki.ca, false, "1.3"}, TlsRole::kServer);
  return Store::Make(kSegmentBytes, AllowAll(), o);
}

TcpTransportOptions TlsClient(const TestPki& pki, int streams) {
  TcpTransportOptions o;
  o.streams = streams;
  o.tls = Ctx({"", "", pki.ca, false, "1.3"}, TlsRole::kClient);
  return o;
}

}  // namespace

TEST_CASE("over TLS, writes and reads are byte-identical from 1 byte to 9 MiB on 1 and 4 streams") {
  std::mt19937_64 rng(TestSeed() + 900);
  TestPki pki = mc::net::testing::MakeTestPki();
  Store store = TlsStore(pki);
  for (int streams : {1, 4}) {
    TcpTransport tcp(TlsClient(pki, streams));
    for (size_t len : {size_t{1}, size_t{4096}, size_t{65537}, size_t{(9 << 20) + 11}}) {
      CAPTURE(streams);
      CAPTURE(len);
      auto data = RandomBytes(rng, len);
      uint64_t offset = rng() % (kSegmentBytes - len + 1);
      REQUIRE(tcp.Write(store.endpoint, offset, data.data(), len).ok());
      CHECK(std::memcmp(store.segment->base() + offset, data.data(), len) == 0);
      std::vector<uint8_t> back(len);
      REQUIRE(tcp.Read(store.endpoint, offset, back.data(), len).ok());
      CHECK(back == data);
    }
  }
  CHECK(store.server->stats().tls_failures == 0);
  mc::net::testing::RemoveTestPki(pki);
}

TEST_CASE("a plaintext client of a TLS data port is told TLS is required") {
  TestPki pki = mc::net::testing::MakeTestPki();
  Store store = TlsStore(pki);
  TcpTransport plain;
  uint8_t byte = 1;
  mc::Status st = plain.Write(store.endpoint, 0, &byte, 1);
  REQUIRE_FALSE(st.ok());
  CHECK_MESSAGE(st.message().find("this store requires TLS") != std::string::npos, st.message());
  CHECK(store.server->stats().tls_failures == 1);
  mc::net::testing::RemoveTestPki(pki);
}

TEST_CASE("a TLS client of a plaintext data port fails saying the store does not speak TLS") {
  TestPki pki = mc::net::testing::MakeTestPki();
  Store store = Store::Make(kSegmentBytes);
  TcpTransport tcp(TlsClient(pki, 1));
  uint8_t byte = 1;
  mc::Status st = tcp.Write(store.endpoint, 0, &byte, 1);
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == ErrorCode::PROTOCOL_ERROR);
  CHECK_MESSAGE(st.message().find("does not speak TLS") != std::string::npos, st.message());
  mc::net::testing::RemoveTestPki(pki);
}

// Raw-socket tests of the data server: what a broken or hostile peer sends.
#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <limits>

#include "dataserver/store_fixture.h"
#include "net/stream_io.h"
#include "transfer/data_protocol.h"
#include "transfer/tcp_transport.h"

using namespace mc::transfer;
using mc::ErrorCode;
using mc::transfer::testing::Store;

namespace {

// A connected socket that has read the server's HELLO.
struct Raw {
  int fd = -1;
  wire::Hello hello;
  explicit Raw(const Store& store) {
    auto r = mc::net::ConnectTcp({"127.0.0.1", store.server->port()}, 2000000);
    REQUIRE(r.ok());
    fd = *r;
    mc::net::TuneSocket(fd, mc::net::SocketTuning{0, 5000000});
    uint8_t buf[wire::kHelloBytes];
    REQUIRE(mc::net::RecvAll(fd, buf, sizeof(buf)).ok());
    REQUIRE(wire::DecodeHello(buf, &hello).ok());
  }
  ~Raw() { close(fd); }
  void SendRequest(uint16_t op, uint64_t offset, uint64_t len, uint64_t id = 9) {
    uint8_t hdr[wire::kRequestBytes];
    wire::EncodeRequest({op, id, offset, len}, hdr);
    REQUIRE(mc::net::SendAll(fd, hdr, sizeof(hdr)).ok());
  }
  // Reads one reply; returns its status code (OK = 0) and skips its payload.
  int32_t ReadReply(uint64_t* length = nullptr) {
    uint8_t hdr[wire::kReplyBytes];
    if (!mc::net::RecvAll(fd, hdr, sizeof(hdr)).ok()) return 1;  // 1: no reply at all
    wire::Reply r;
    REQUIRE(wire::DecodeReply(hdr, &r).ok());
    std::vector<uint8_t> body(r.length);
    REQUIRE(mc::net::RecvAll(fd, body.data(), body.size()).ok());
    if (length != nullptr) *length = r.length;
    return r.status;
  }
  bool ClosedByPeer() {
    char c;
    return recv(fd, &c, 1, 0) == 0;
  }
};

constexpr uint16_t kWrite = static_cast<uint16_t>(wire::Op::kWrite);
constexpr uint16_t kRead = static_cast<uint16_t>(wire::Op::kRead);

// The server still serves a well-behaved client.
void CheckStillServing(const Store& store) {
  TcpTransport tcp;
  uint8_t buf[64] = {1, 2, 3};
  CHECK(tcp.Write(store.endpoint, 0, buf, sizeof(buf)).ok());
  CHECK(tcp.Read(store.endpoint, 0, buf, sizeof(buf)).ok());
}

}  // namespace

TEST_CASE("wire headers round-trip and bad magic is rejected") {
  uint8_t buf[wire::kRequestBytes];
  wire::EncodeRequest({kRead, 0x0102030405060708ull, 77, 1ull << 33}, buf);
  wire::Request r;
  REQUIRE(wire::DecodeRequest(buf, &r).ok());
  CHECK(r.op == kRead);
  CHECK(r.request_id == 0x0102030405060708ull);
  CHECK(r.offset == 77);
  CHECK(r.length == (1ull << 33));
  buf[0] ^= 1;
  CHECK(wire::DecodeRequest(buf, &r).code() == ErrorCode::PROTOCOL_ERROR);
  std::array<uint8_t, wire::kNonceBytes> nonce{};
  CHECK(wire::AuthMac("a", nonce) != wire::AuthMac("b", nonce));
}

TEST_CASE("garbage bytes get a protocol error and a closed connection") {
  Store store = Store::Make(1 << 20);
  {
    Raw raw(store);
    std::string junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    junk.resize(wire::kRequestBytes, '.');
    REQUIRE(mc::net::SendAll(raw.fd, junk.data(), junk.size()).ok());
    CHECK(raw.ReadReply() == static_cast<int32_t>(ErrorCode::PROTOCOL_ERROR));
    CHECK(raw.ClosedByPeer());
  }
  CHECK(store.server->stats().protocol_errors == 1);
  CheckStillServing(store);
}

TEST_CASE("a truncated frame does not disturb the server") {
  Store store = Store::Make(1 << 20);
  {
    Raw raw(store);
    uint8_t hdr[wire::kRequestBytes];
    wire::EncodeRequest({kWrite, 1, 0, 4096}, hdr);
    REQUIRE(mc::net::SendAll(raw.fd, hdr, 20).ok());  // half a header, then hang up
  }
  {
    Raw raw(store);
    raw.SendRequest(kWrite, 0, 4096);
    std::vector<uint8_t> part(1000, 5);
    REQUIRE(mc::net::SendAll(raw.fd, part.data(), part.size()).ok());  // payload cut short
  }
  CheckStillServing(store);
}

TEST_CASE("out-of-bounds and overflowing ranges are refused and the connection stays usable") {
  Store store = Store::Make(1 << 20);
  Raw raw(store);
  raw.SendRequest(kRead, (1 << 20) - 10, 11);
  CHECK(raw.ReadReply() == static_cast<int32_t>(ErrorCode::INVALID_READ));
  // offset + len wraps around 2^64: must not pass a naive `offset + len <= size`.
  raw.SendRequest(kRead, std::numeric_limits<uint64_t>::max() - 5, 16);
  CHECK(raw.ReadReply() == static_cast<int32_t>(ErrorCode::INVALID_READ));
  // A refused write has its payload drained, so the next frame parses.
  raw.SendRequest(kWrite, std::numeric_limits<uint64_t>::max(), 100);
  std::vector<uint8_t> payload(100, 9);
  REQUIRE(mc::net::SendAll(raw.fd, payload.data(), payload.size()).ok());
  CHECK(raw.ReadReply() == static_cast<int32_t>(ErrorCode::INVALID_WRITE));
  uint64_t len = 0;
  raw.SendRequest(kRead, 0, 64);
  CHECK(raw.ReadReply(&len) == 0);
  CHECK(len == 64);
  CHECK(store.server->stats().requests_refused == 3);
}

TEST_CASE("unknown ops and frames above the size limit close the connection") {
  TcpDataServerOptions opts;
  opts.max_frame_bytes = 1 << 20;
  Store store = Store::Make(4 << 20, AllowAll(), opts);
  {
    Raw raw(store);
    raw.SendRequest(77, 0, 0);
    CHECK(raw.ReadReply() == static_cast<int32_t>(ErrorCode::PROTOCOL_ERROR));
    CHECK(raw.ClosedByPeer());
  }
  {
    Raw raw(store);
    raw.SendRequest(kWrite, 0, (1 << 20) + 1);
    CHECK(raw.ReadReply() == static_cast<int32_t>(ErrorCode::PROTOCOL_ERROR));
    CHECK(raw.ClosedByPeer());
  }
  CHECK(store.server->stats().protocol_errors == 2);
  CheckStillServing(store);
}

TEST_CASE("with a token set, requests before authentication are refused") {
  TcpDataServerOptions opts;
  opts.auth_token = "tok";
  Store store = Store::Make(1 << 20, AllowAll(), opts);
  Raw raw(store);
  CHECK((raw.hello.flags & wire::kFlagAuthRequired) != 0);
  raw.SendRequest(kRead, 0, 16);
  CHECK(raw.ReadReply() == static_cast<int32_t>(ErrorCode::AUTH_FAILED));
  CHECK(raw.ClosedByPeer());
  CHECK(store.server->stats().requests_served == 0);
}

TEST_CASE("pipelined requests are answered in order, a read before a write seeing the old bytes") {
  Store store = Store::Make(1 << 20);
  std::memset(store.segment->base(), 0x11, 4096);
  Raw raw(store);
  // READ [0, 4096), WRITE 0x22 over it, READ it again, all in one send: the
  // server answers the first read from buffered requests, so its reply must
  // not pick up the write that follows it.
  std::vector<uint8_t> frame(3 * wire::kRequestBytes + 4096);
  wire::EncodeRequest({kRead, 1, 0, 4096}, frame.data());
  wire::EncodeRequest({kWrite, 2, 0, 4096}, frame.data() + wire::kRequestBytes);
  std::memset(frame.data() + 2 * wire::kRequestBytes, 0x22, 4096);
  wire::EncodeRequest({kRead, 3, 0, 4096}, frame.data() + 2 * wire::kRequestBytes + 4096);
  REQUIRE(mc::net::SendAll(raw.fd, frame.data(), frame.size()).ok());
  for (uint64_t id = 1; id <= 3; ++id) {
    CAPTURE(id);
    uint8_t hdr[wire::kReplyBytes];
    REQUIRE(mc::net::RecvAll(raw.fd, hdr, sizeof(hdr)).ok());
    wire::Reply r;
    REQUIRE(wire::DecodeReply(hdr, &r).ok());
    CHECK(r.status == 0);
    CHECK(r.request_id == id);
    std::vector<uint8_t> body(r.length);
    REQUIRE(mc::net::RecvAll(raw.fd, body.data(), body.size()).ok());
    if (id == 2) continue;
    REQUIRE(body.size() == 4096);
    CHECK(body[0] == (id == 1 ? 0x11 : 0x22));
    CHECK(body[4095] == (id == 1 ? 0x11 : 0x22));
  }
}

// libFuzzer target for the data-plane wire protocol (transfer/data_protocol.*)
// and the store's decision on each request (transfer/access.cc
// ScreenRequest, the capability check, the AUTH handshake), without sockets.
// The first input byte picks the side and the access check; the rest is the
// byte stream that side receives:
//   server side: request headers (88 bytes) and their payloads, as
//     TcpDataServer::Serve reads them: a malformed header ends the stream, a
//     refused WRITE's payload is drained, a served one lands in a segment
//     buffer (ASan catches any byte outside it);
//   client side: the HELLO (or the refusal that replaces it) and replies
//     with their error messages or READ data, as TcpTransport reads them.
// Every decoded header must re-encode to the same bytes.
// Run: tests/fuzz/run_fuzz.sh data_wire_fuzz.
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/capability.h"
#include "common/error_code.h"
#include "common/log.h"
#include "transfer/access.h"
#include "transfer/data_protocol.h"

using namespace mc;
using namespace mc::transfer;

namespace {

constexpr uint64_t kNowMs = 1'700'000'000'000ull;
constexpr uint64_t kIncarnation = 7;
const std::string kAccessKey(32, 'k');
const std::string kToken = "fuzz-token";
constexpr uint64_t kSegmentSizes[4] = {1, 4096, 65536, 3};

struct Input {
  const uint8_t* p;
  size_t n;
  bool Take(size_t k, const uint8_t** out) {
    if (n < k) return false;
    *out = p;
    p += k;
    n -= k;
    return true;
  }
  size_t Skip(uint64_t k) {
    size_t s = k < n ? static_cast<size_t>(k) : n;
    p += s;
    n -= s;
    return s;
  }
};

void CheckRequestRoundTrip(const uint8_t* hdr, const wire::Request& req) {
  uint8_t again[wire::kRequestBytes];
  wire::EncodeRequest(req, again);
  if (std::memcmp(again, hdr, sizeof again) != 0) std::abort();
}

// mode bits: 0-1 access check, 2-3 segment size, 4 the grant is signed by
// the harness (so range and expiry checks behind a valid MAC are reached).
void ServerSide(uint8_t mode, Input in) {
  std::vector<uint8_t> segment(kSegmentSizes[(mode >> 2) & 3]);
  const bool sign = mode & 16;
  AccessCheck check;
  switch (mode & 3) {
    case 0: check = CapabilityCheck(kAccessKey, kIncarnation, [] { return kNowMs; }); break;
    case 1: check = GrantBoundsCheck([] { return kNowMs; }); break;
    case 2: check = AllowAll(); break;
    default: check = CapabilityCheck("", 0, [] { return uint64_t{0}; }); break;
  }
  std::array<uint8_t, wire::kNonceBytes> nonce{};
  nonce[0] = mode;
  const uint64_t max_frame = 1 << 20;
  const uint8_t* hdr;
  while (in.Take(wire::kRequestBytes, &hdr)) {
    wire::Request req;
    Status st = wire::DecodeRequest(hdr, &req);
    if (!st.ok()) {
      if (st.code() != ErrorCode::PROTOCOL_ERROR) std::abort();
      return;  // answered and closed
    }
    CheckRequestRoundTrip(hdr, req);
    if (req.op == static_cast<uint16_t>(wire::Op::kAuth)) {
      const uint8_t* mac;
      if (req.length != wire::kMacBytes || !in.Take(wire::kMacBytes, &mac)) return;
      auto want = wire::AuthMac(kToken, nonce);
      if (!wire::MacEqual(mac, want.data())) return;  // AUTH_FAILED, closed
      continue;
    }
    if (sign && req.op >= 1 && req.op <= 2) {
      CapabilityGrant g{req.op == 1 ? CapabilityOp::kWrite : CapabilityOp::kRead, kIncarnation,
                        req.grant_offset, req.grant_size, req.grant_expiry_unix_ms};
      std::string mac = SignCapability(kAccessKey, g);
      if (mac.size() != wire::kMacBytes) std::abort();
      std::memcpy(req.grant_mac.data(), mac.data(), wire::kMacBytes);
    }
    RequestVerdict v = ScreenRequest(req, segment.size(), max_frame, check);
    const bool is_write = req.op == static_cast<uint16_t>(wire::Op::kWrite);
    switch (v.action) {
      case RequestVerdict::Action::kClose:
        if (v.status.code() != ErrorCode::PROTOCOL_ERROR) std::abort();
        return;
      case RequestVerdict::Action::kRefuse:
        if (v.status.ok()) std::abort();
        if (is_write && in.Skip(req.length) < req.length) return;  // peer gone mid-drain
        break;
      case RequestVerdict::Action::kServe: {
        if (!v.status.ok()) std::abort();
        if (req.offset > segment.size() || req.length > segment.size() - req.offset) std::abort();
        if (v.op == OpKind::kRetire) break;  // no bytes move, whatever the length
        if (req.length > max_frame) std::abort();
        if (is_write) {
          const size_t avail = in.n < req.length ? in.n : static_cast<size_t>(req.length);
          if (avail > 0) std::memcpy(segment.data() + req.offset, in.p, avail);
          if (in.Skip(req.length) < req.length) return;
        } else {
          volatile uint8_t sum = 0;
          for (uint64_t i = 0; i < req.length; ++i) sum ^= segment[req.offset + i];
          (void)sum;
        }
        break;
      }
    }
  }
}

void ReadMessage(Input& in, const wire::Reply& reply) {
  // TcpTransport's ReadErrorReply: at most kMaxErrorMessageBytes, any status.
  if (reply.length <= wire::kMaxErrorMessageBytes) {
    std::string msg(reply.length, '\0');
    const uint8_t* p;
    if (in.Take(msg.size(), &p)) std::memcpy(msg.data(), p, msg.size());
  }
  ErrorCode code = IsKnownErrorCode(reply.status) ? static_cast<ErrorCode>(reply.status)
                                                  : ErrorCode::TRANSFER_FAIL;
  (void)ErrorCodeName(code);
}

void ClientSide(Input in) {
  const uint8_t* buf;
  if (!in.Take(wire::kReplyBytes, &buf)) return;
  wire::Reply refusal;
  if (wire::DecodeReply(buf, &refusal).ok()) return ReadMessage(in, refusal);
  uint8_t hello_bytes[wire::kHelloBytes];
  std::memcpy(hello_bytes, buf, wire::kReplyBytes);
  const uint8_t* rest;
  if (!in.Take(wire::kHelloBytes - wire::kReplyBytes, &rest)) return;
  std::memcpy(hello_bytes + wire::kReplyBytes, rest, wire::kHelloBytes - wire::kReplyBytes);
  wire::Hello hello;
  if (!wire::DecodeHello(hello_bytes, &hello).ok()) return;
  uint8_t again[wire::kHelloBytes];
  wire::EncodeHello(hello, again);
  if (std::memcmp(again, hello_bytes, sizeof again) != 0) std::abort();
  if (hello.flags & wire::kFlagAuthRequired) (void)wire::AuthMac(kToken, hello.nonce);
  while (in.Take(wire::kReplyBytes, &buf)) {
    wire::Reply reply;
    if (!wire::DecodeReply(buf, &reply).ok()) return;
    uint8_t out[wire::kReplyBytes];
    wire::EncodeReply(reply, out);
    if (std::memcmp(out, buf, sizeof out) != 0) std::abort();
    if (reply.status != 0) {
      ReadMessage(in, reply);
      return;  // the transfer failed; the client drops the connection
    }
    in.Skip(reply.length);  // READ data
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  SetLogLevel(LogLevel::ERROR);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Input in{data + 1, size - 1};
  if (data[0] & 0x80) ClientSide(in);
  else ServerSide(data[0], in);
  return 0;
}

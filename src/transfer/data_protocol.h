// Wire format of the TCP data path (version 3). All integers little-endian.
//
// On accept the server sends HELLO (48 bytes):
//   u32 magic "MCTH" | u16 version | u16 flags (bit 0: auth required)
//   u64 segment_bytes | u8 nonce[32]
// Then the client sends requests, each a 96-byte header optionally
// followed by a payload:
//   u32 magic "MCTQ" | u16 op | u16 reserved (0) | u64 request_id
//   u64 offset | u64 length
//   u64 grant_offset | u64 grant_size | u64 grant_expiry_unix_ms
//   u64 grant_term | u8 grant_mac[32]
//   op 1 WRITE: `length` payload bytes follow, stored at segment[offset..).
//   op 2 READ:  no payload; the reply carries `length` bytes of segment.
//   op 3 AUTH:  offset 0, length 32, grant fields 0, payload
//               HMAC-SHA256(token, "mooncake-transfer-auth-v1" || nonce).
//               Must be the first request when the HELLO says auth is
//               required.
//   op 4 RDMA_DESCRIBE: offset 0, length 0; the reply carries the segment's
//               RDMA descriptor (rdma_desc.h: buffers with rkeys, devices),
//               so only a peer that passed AUTH learns the rkeys.
//   op 5 RDMA_CONNECT: `length` (<= 1024) payload bytes, an encoded
//               RdmaConnectRequest; the reply carries the RdmaConnectReply.
//               The store's QPs live until this connection closes.
//   A store that serves no RDMA answers ops 4 and 5 NOT_SUPPORTED and keeps
//   the connection.
//   op 6 READ_SEALED: 8 payload bytes follow, u64 expected seal (0: none);
//               the store copies `length` bytes of segment between two looks
//               at its write epochs (write_epochs.h). With an expected seal
//               it answers them only if no write touched the range since
//               that seal (nor during the copy): the reply carries u64 seal,
//               then the `length` bytes; otherwise REPLICA_IS_GONE (stale:
//               the space was written since; ask the master). Without one
//               it is a READ that also tells the range's seal, or 0 when a
//               write was in flight there. With an expected seal
//               the grant may be a sealed-read grant (op byte 3 in its MAC):
//               those live longer than a lease, and serve only sealed reads
//               that name a seal. A store whose segment RDMA peers may write
//               (no trustworthy epochs) answers seal 0 without an expected
//               seal and NOT_SUPPORTED with one.
//   op 7 RETIRE: no payload; the master's (grant op byte 4): the object in
//               [offset, offset + length) was removed or replaced, so the
//               store counts the range as written and marks its 64-byte
//               granules retired (write_epochs.h) before it answers (reply length 0):
//               no sealed read names a seal of it afterwards, and none can
//               learn one until new bytes fill its granules. A store without
//               epochs answers OK (it serves no sealed read that names a seal).
// The grant is the transfer capability the master signed for the buffer
// being moved (common/capability.h): grant_mac = HMAC-SHA256(segment access
// key, "mooncake-cap-v2" || u8 op || u64 incarnation || u64 grant_offset ||
// u64 grant_size || u64 grant_expiry_unix_ms || u64 grant_term). The store
// fences terms (term_fence.h): once a verified grant of term T was seen, a
// grant of a term below T is refused (INVALID_WRITE / INVALID_READ), and no
// request of an older term is still moving bytes when the first one of T
// starts. The store serves a WRITE or
// READ only if the MAC verifies under its own key and incarnation, the op
// matches, the grant has not expired by the store's clock, and
// [offset, offset + length) lies inside [grant_offset, grant_offset +
// grant_size): one grant covers every striped piece of its buffer. Versions
// 1 (a 32-byte header without a grant) and 2 (88 bytes, no term) are not
// accepted.
// Every request gets a 24-byte reply:
//   u32 magic "MCTR" | i32 status (ErrorCode) | u64 request_id | u64 length
//   status OK: `length` data bytes follow for READ, 0 otherwise.
//   status < 0: `length` (<= 512) bytes of UTF-8 message follow.
// Requests may be pipelined; replies come in order, possibly several per
// write, each as if its request had been served alone (a READ before a
// WRITE of the same range carries the old bytes).
// A WRITE is acknowledged only once all its bytes are in segment memory. A
// refused WRITE whose header was well-formed has its payload drained so the
// connection stays usable; a malformed header (bad magic, unknown op, length
// above the server's frame limit) gets an error reply and the connection is
// closed. A failed AUTH is answered AUTH_FAILED and closed.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace mc::transfer::wire {

inline constexpr uint32_t kHelloMagic = 0x4854434d;    // "MCTH"
inline constexpr uint32_t kRequestMagic = 0x5154434d;  // "MCTQ"
inline constexpr uint32_t kReplyMagic = 0x5254434d;    // "MCTR"
inline constexpr uint16_t kVersion = 3;
inline constexpr uint16_t kFlagAuthRequired = 1;

inline constexpr size_t kHelloBytes = 48;
inline constexpr size_t kRequestBytes = 96;
inline constexpr size_t kReplyBytes = 24;
inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kMacBytes = 32;
inline constexpr size_t kMaxErrorMessageBytes = 512;

enum class Op : uint16_t {
  kWrite = 1,
  kRead = 2,
  kAuth = 3,
  kRdmaDescribe = 4,
  kRdmaConnect = 5,
  kReadSealed = 6,
  kRetire = 7,
};
inline constexpr size_t kSealBytes = 8;
inline constexpr size_t kMaxRdmaConnectBytes = 1024;
inline constexpr size_t kMaxRdmaDescribeReplyBytes = 1 << 20;

struct Hello {
  uint16_t version = kVersion;
  uint16_t flags = 0;
  uint64_t segment_bytes = 0;
  std::array<uint8_t, kNonceBytes> nonce{};
};

struct Request {
  uint16_t op = 0;
  uint64_t request_id = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t grant_offset = 0;
  uint64_t grant_size = 0;
  uint64_t grant_expiry_unix_ms = 0;
  std::array<uint8_t, kMacBytes> grant_mac{};
  uint64_t grant_term = 0;  // after the MAC here so brace-initialised requests keep their order
};

struct Reply {
  int32_t status = 0;
  uint64_t request_id = 0;
  uint64_t length = 0;
};

void EncodeHello(const Hello& h, uint8_t out[kHelloBytes]);
Status DecodeHello(const uint8_t in[kHelloBytes], Hello* out);
void EncodeRequest(const Request& r, uint8_t out[kRequestBytes]);
// Checks magic and reserved bits only; op and bounds are the server's call.
Status DecodeRequest(const uint8_t in[kRequestBytes], Request* out);
void EncodeReply(const Reply& r, uint8_t out[kReplyBytes]);
Status DecodeReply(const uint8_t in[kReplyBytes], Reply* out);

// HMAC-SHA256 over the domain string and the nonce, keyed by the token.
std::array<uint8_t, kMacBytes> AuthMac(std::string_view token,
                                       const std::array<uint8_t, kNonceBytes>& nonce);
// Constant-time comparison.
bool MacEqual(const uint8_t* a, const uint8_t* b);
// Cryptographically random nonce (OpenSSL RAND_bytes).
Status RandomNonce(std::array<uint8_t, kNonceBytes>* out);

}  // namespace mc::transfer::wire

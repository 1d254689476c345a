// Framing of the master RPC protocol (mooncake-protocol(7)).
//
// Every message is a 20-byte header followed by a payload:
//   u32 magic "MCRP" | u8 version | u8 flags | u16 opcode |
//   u32 payload_bytes | u64 request_id          (all little-endian)
// A reply carries the request's opcode and request_id with kFlagReply set,
// so a client may have many requests outstanding on one connection. The
// first 5 bytes (magic, version) keep their meaning in every future version.
// Constants and pure functions: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/result.h"
#include "proto/ops.h"

namespace mc::proto {

// "MCRP" in byte order on the wire.
inline constexpr uint32_t kMagic = 0x5052434D;
inline constexpr uint8_t kProtocolVersion = 1;
inline constexpr size_t kFrameHeaderBytes = 20;

// A payload after the handshake; bounds what one request may make us buffer.
inline constexpr uint32_t kMaxPayloadBytes = 64u << 20;
// Before authentication a peer gets far less, so an unauthenticated peer
// cannot make the server buffer megabytes.
inline constexpr uint32_t kMaxHandshakePayloadBytes = 1024;

inline constexpr uint8_t kFlagReply = 0x01;
inline constexpr uint8_t kKnownFlags = kFlagReply;

// X(name, value): the opcodes of the connection itself; the operations'
// opcodes come from the table in proto/ops.h. Values are the wire format.
#define MC_PROTO_SESSION_OPCODES(X) \
  X(ConnectionError, 0x0000)        \
  X(Hello, 0x0001)                  \
  X(Auth, 0x0002)

enum class Opcode : uint16_t {
#define MC_PROTO_OPCODE_ENUM(name, value) k##name = value,
#define MC_PROTO_OP_OPCODE_ENUM(name, value, Req, Rep, kind) k##name = value,
  MC_PROTO_SESSION_OPCODES(MC_PROTO_OPCODE_ENUM) MC_MASTER_OPS(MC_PROTO_OP_OPCODE_ENUM)
#undef MC_PROTO_OP_OPCODE_ENUM
#undef MC_PROTO_OPCODE_ENUM
};

// "PutStart"; "Unknown" for a value not listed.
std::string_view OpcodeName(Opcode op);
bool IsKnownOpcode(uint16_t value);
// A notification (Notify in proto/ops.h) is a request the server never
// answers: the client does not wait, and the server drops its result.
bool IsNotification(Opcode op);

struct FrameHeader {
  uint8_t version = kProtocolVersion;
  uint8_t flags = 0;
  Opcode opcode = Opcode::kConnectionError;
  uint32_t payload_bytes = 0;
  uint64_t request_id = 0;

  bool is_reply() const { return (flags & kFlagReply) != 0; }
  bool operator==(const FrameHeader&) const = default;
};

void EncodeFrameHeader(const FrameHeader& h, uint8_t out[kFrameHeaderBytes]);

// Decodes exactly kFrameHeaderBytes bytes. PROTOCOL_ERROR on a wrong magic,
// unknown flag bits, or payload_bytes above `max_payload_bytes`. The version
// and opcode are returned as found: the caller decides what it accepts (the
// handshake must answer a wrong version with an error naming both).
Result<FrameHeader> DecodeFrameHeader(const uint8_t* p, size_t n, uint32_t max_payload_bytes);

}  // namespace mc::proto

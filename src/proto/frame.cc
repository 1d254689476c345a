#include "proto/frame.h"

#include <string>

#include "proto/byte_io.h"

namespace mc::proto {

std::string_view OpcodeName(Opcode op) {
  switch (op) {
#define MC_PROTO_OPCODE_NAME(name, value) \
  case Opcode::k##name:                   \
    return #name;
#define MC_PROTO_OP_NAME(name, value, Req, Rep, kind) MC_PROTO_OPCODE_NAME(name, value)
    MC_PROTO_SESSION_OPCODES(MC_PROTO_OPCODE_NAME)
    MC_MASTER_OPS(MC_PROTO_OP_NAME)
#undef MC_PROTO_OP_NAME
#undef MC_PROTO_OPCODE_NAME
  }
  return "Unknown";
}

bool IsKnownOpcode(uint16_t value) {
  switch (value) {
#define MC_PROTO_OPCODE_CASE(name, v) case v:
#define MC_PROTO_OP_CASE(name, v, Req, Rep, kind) case v:
    MC_PROTO_SESSION_OPCODES(MC_PROTO_OPCODE_CASE)
    MC_MASTER_OPS(MC_PROTO_OP_CASE)
#undef MC_PROTO_OP_CASE
#undef MC_PROTO_OPCODE_CASE
    return true;
  }
  return false;
}

bool IsNotification(Opcode op) {
  switch (op) {
#define MC_PROTO_OP_NOTIFY(name, v, Req, Rep, kind) \
  case Opcode::k##name:                             \
    return std::string_view(#kind) == "Notify";
    MC_MASTER_OPS(MC_PROTO_OP_NOTIFY)
#undef MC_PROTO_OP_NOTIFY
    default:
      return false;
  }
}

void EncodeFrameHeader(const FrameHeader& h, uint8_t out[kFrameHeaderBytes]) {
  auto put = [&](size_t at, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out[at + i] = static_cast<uint8_t>((v >> (8 * i)) & 0xff);
  };
  put(0, kMagic, 4);
  out[4] = h.version;
  out[5] = h.flags;
  put(6, static_cast<uint16_t>(h.opcode), 2);
  put(8, h.payload_bytes, 4);
  put(12, h.request_id, 8);
}

Result<FrameHeader> DecodeFrameHeader(const uint8_t* p, size_t n, uint32_t max_payload_bytes) {
  if (n < kFrameHeaderBytes) {
    return Error(ErrorCode::PROTOCOL_ERROR,
                 "frame header truncated: " + std::to_string(n) + " of 20 bytes");
  }
  Reader r(p, kFrameHeaderBytes);
  uint32_t magic = r.U32("magic");
  FrameHeader h;
  h.version = r.U8("version");
  h.flags = r.U8("flags");
  h.opcode = static_cast<Opcode>(r.U16("opcode"));
  h.payload_bytes = r.U32("payload_bytes");
  h.request_id = r.U64("request_id");
  if (magic != kMagic) {
    return Error(ErrorCode::PROTOCOL_ERROR,
                 "bad frame magic: not a mooncake RPC peer (expected \"MCRP\")");
  }
  if ((h.flags & ~kKnownFlags) != 0) {
    return Error(ErrorCode::PROTOCOL_ERROR, "unknown frame flags " + std::to_string(h.flags));
  }
  if (h.payload_bytes > max_payload_bytes) {
    return Error(ErrorCode::PROTOCOL_ERROR,
                 "frame payload of " + std::to_string(h.payload_bytes) +
                     " bytes exceeds the limit of " + std::to_string(max_payload_bytes));
  }
  return h;
}

}  // namespace mc::proto

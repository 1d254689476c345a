// Frames of the dummy-client protocol (proto/dummy_ops.h) on a Unix socket:
// proto/frame.h's 20-byte header, then the payload; a descriptor may ride
// with a frame (the pool's memfd in the attach reply). Shared by the dummy
// side (client/dummy_client) and the standalone client (clientd).
// Each side sends one frame and then waits for the other's, so a read never
// finds more than one frame: a small frame is one syscall each way. Time
// limits are the socket's (net::SetUnixTimeouts).
// Thread-safe (no state); one socket must not be used by two threads.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace mc::client {

// Bounds what one dummy request may make either side buffer.
inline constexpr uint32_t kMaxDummyPayloadBytes = 64u << 20;

struct DummyFrame {
  uint16_t opcode = 0;
  bool reply = false;
  uint64_t request_id = 0;
  std::string payload;
  int fd = -1;  // a descriptor that came with it (the receiver owns it)
};

Status SendDummyFrame(int sock, const DummyFrame& frame);
// RPC_FAIL when the peer closed, RPC_TIMEOUT past the socket's timeout,
// PROTOCOL_ERROR for a bad header or bytes past the frame.
Status RecvDummyFrame(int sock, DummyFrame* frame);

}  // namespace mc::client

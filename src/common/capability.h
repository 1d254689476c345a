// Transfer capabilities: how a store knows a transfer was allowed by the
// master without asking it.
//
// The store makes a random access key per segment incarnation and gives it
// to the master when it mounts. For each buffer the master hands out (a
// PutStart: write; a GetReplicaList: read), it signs the buffer's range,
// the operation and an expiry with that key. The client presents the
// signature with each transfer; the store checks it covers the requested
// range, matches the operation and has not expired. So writes land only in
// buffers of in-progress puts, reads only touch complete replicas under a
// lease, and freed space cannot be read once the grant expired.
// Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace mc {

enum class CapabilityOp : uint8_t { kWrite = 1, kRead = 2 };

struct CapabilityGrant {
  CapabilityOp op = CapabilityOp::kRead;
  uint64_t incarnation = 0;
  uint64_t offset = 0;
  uint64_t size_bytes = 0;
  uint64_t expiry_unix_ms = 0;
};

// 32-byte signature of `grant` under `access_key`.
std::string SignCapability(std::string_view access_key, const CapabilityGrant& grant);

// OK if `signature` is the signature of `grant`, the grant is unexpired at
// `now_unix_ms`, has operation `op`, and covers [offset, offset + len).
// INVALID_WRITE / INVALID_READ with the reason otherwise.
Status CheckCapability(std::string_view access_key, const CapabilityGrant& grant,
                       std::string_view signature, CapabilityOp op, uint64_t offset,
                       uint64_t len, uint64_t now_unix_ms);

uint64_t WallClockUnixMs();

}  // namespace mc

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
//
// Why expiry is enough to keep grants off freed space: a grant cannot be
// revoked (the store keeps no per-grant state), so it must die before the
// space it names can be given to another object. The master makes
//   - a read grant expire with the lease the same get took: a leased object
//     is neither removed nor evicted, so its space is not freed while a read
//     grant on it lives;
//   - a write grant expire with the put's deadline (put_timeout): an
//     unfinished put's buffers are not freed before it.
// The wall time is read before the lease starts and rounded down, and a
// grant is expired at expiry_unix_ms itself, so it never outlives either.
// What expiry does not cover, plainly:
//   - `rm --force` removes a leased object, and a put that ends or is
//     revoked early frees its space before put_timeout; a client that kept
//     its grant could then touch space reused by a newer object until the
//     grant expires (at most the lease TTL / put_timeout). Only clients that
//     passed authentication hold grants at all, and such a client may already
//     remove and re-put any key (there is no per-key ownership), so the
//     window gives it no power it lacks; what grants stop is a peer without
//     one (no token, or a buggy or stale client) touching bytes at all.
//   - a failover of the master (HA on etcd): the new leader knows no put or
//     lease of the old one, so expiry alone would let an old grant write
//     into space the new leader hands out. Every grant carries the term of
//     the master that signed it (the HA leader's term, 0 without HA); a store
//     that has seen a grant of a newer term refuses every older one
//     (transfer/term_fence.h), so no write or read of a deposed leader's
//     grant lands after the first one of its successor.
//   - the store checks expiry with its own wall clock: a store whose clock
//     runs behind the master's honours grants that much longer. Keep clocks
//     in sync (NTP) or the TTLs well above the skew.
// Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace mc {

// kReadSealed: a direct read's grant (issue 33). It may outlive any lease,
// because the store serves it only on a sealed read that names a seal
// (transfer/write_epochs.h): bytes written since the seal are refused, so
// freed and reused space is never read under it.
// kRetire: the master's own, for the data port's RETIRE of a range whose
// object it removed or replaced (transfer/write_epochs.h).
enum class CapabilityOp : uint8_t { kWrite = 1, kRead = 2, kReadSealed = 3, kRetire = 4 };

struct CapabilityGrant {
  CapabilityOp op = CapabilityOp::kRead;
  uint64_t incarnation = 0;
  uint64_t offset = 0;
  uint64_t size_bytes = 0;
  uint64_t expiry_unix_ms = 0;
  // The term of the master that signed it (its HA leadership; 0 without HA).
  uint64_t term = 0;
};

// 32-byte signature of `grant` under `access_key`.
std::string SignCapability(std::string_view access_key, const CapabilityGrant& grant);

// OK if `signature` is the signature of `grant`, the grant is unexpired at
// `now_unix_ms`, has operation `op`, and covers [offset, offset + len).
// INVALID_WRITE / INVALID_READ with the reason otherwise.
Status CheckCapability(std::string_view access_key, const CapabilityGrant& grant,
                       std::string_view signature, CapabilityOp op, uint64_t offset,
                       uint64_t len, uint64_t now_unix_ms);

// The same checks without the signature (op, expiry, range), for a party
// that holds no key: the same-host client checking itself.
Status CheckGrantBounds(const CapabilityGrant& grant, CapabilityOp op, uint64_t offset,
                        uint64_t len, uint64_t now_unix_ms);

}  // namespace mc

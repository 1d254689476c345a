// Access checks built on the master's transfer capabilities
// (common/capability.h). Pure functions returning thread-safe callbacks.
//
// CapabilityCheck is the store's: it holds the segment's access key and
// incarnation and verifies the master's signature, so a peer that can reach
// the data port but holds no grant from the master can neither write outside
// an in-progress put nor read anything but a complete, leased replica.
//
// GrantBoundsCheck is the same-host client's. The client maps the store's
// memory itself, so no check in the client protects the store from a
// hostile process of the same user (it can write anywhere it has mapped);
// the 0600 segment file is what keeps other users out. What it does catch
// is this library moving bytes outside the buffer, or with no grant or an
// expired one (e.g. a retry after the lease ran out and the space
// may have been reused): it cannot verify the signature, it has no key.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "transfer/data_protocol.h"
#include "transfer/transport.h"

namespace mc::transfer {

using NowUnixMsFn = std::function<uint64_t()>;

// Verifies the grant's HMAC under `access_key` for this `incarnation`, its
// op, expiry (by `now`) and that it covers the range. INVALID_WRITE or
// INVALID_READ with the reason otherwise.
AccessCheck CapabilityCheck(std::string access_key, uint64_t incarnation, NowUnixMsFn now);

// A segment's access key and incarnation that can be replaced while the
// data server runs: a store the master declared dead takes a new pair before
// it mounts again, which voids every grant signed before (for puts the master
// discarded and reads of objects it dropped), so none can write into or read
// from space the master hands out anew. Thread-safe.
class SegmentKeys {
 public:
  SegmentKeys(std::string access_key, uint64_t incarnation);
  void Set(std::string access_key, uint64_t incarnation);
  std::pair<std::string, uint64_t> Get() const;

 private:
  mutable std::mutex mu_;
  std::string access_key_;
  uint64_t incarnation_;
};

// CapabilityCheck under whatever `keys` holds at the time of each request.
AccessCheck CapabilityCheck(std::shared_ptr<const SegmentKeys> keys, NowUnixMsFn now);

// Same rules without the signature: a grant must be present, unexpired and
// cover the range. (Which op it was for is bound only by the signature.)
AccessCheck GrantBoundsCheck(NowUnixMsFn now);

// What the store's data port (TcpDataServer) does with one request header
// before any payload moves. No I/O, so unit tests and
// tests/fuzz/data_wire_fuzz drive it with any bytes:
//   kClose:  malformed (an op other than WRITE, READ or RETIRE, or a length
//            above max_frame_bytes on a WRITE or READ; PROTOCOL_ERROR): answer `status` and close;
//   kRefuse: outside the segment of `segment_bytes` or refused by `check`
//            (INVALID_WRITE / INVALID_READ): answer `status`, drain a
//            WRITE's payload, keep serving;
//   kServe:  move the bytes of [offset, offset + length), which lies inside
//            the segment.
struct RequestVerdict {
  enum class Action { kServe, kRefuse, kClose };
  Action action = Action::kClose;
  OpKind op = OpKind::kWrite;
  Status status;
};
RequestVerdict ScreenRequest(const wire::Request& req, uint64_t segment_bytes,
                             uint64_t max_frame_bytes, const AccessCheck& check);

}  // namespace mc::transfer

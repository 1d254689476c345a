// Transport: the seam through which a client moves bytes directly between its
// own memory and a store's segment. Data never flows through the master.
//
// Implementations: TcpTransport (any host), ShmTransport (same host, maps the
// segment file), RdmaTransport (one-sided RDMA WRITE/READ, rdma_engine.h),
// and FallbackTransport, which offers each op to several of them in turn
// (the client's shm, then RDMA, then TCP). Every
// implementation is thread-safe: concurrent callers may share one instance.
//
// Access rules: a caller may only write inside a buffer the master allocated
// for its in-progress put, and only read complete replicas it holds a lease
// on. Each op carries the master's grant for its buffer (common/capability.h);
// TCP enforces it on the store side (TcpDataServer's AccessCheck, see
// access.h); shm can only check it in the client, see shm_transport.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "common/result.h"

namespace mc::transfer {

namespace wire {
struct Request;
}  // namespace wire

// How to reach one segment. A transport uses the fields it understands.
struct Endpoint {
  std::string host;      // TCP: data server address (IPv4 literal or name)
  uint16_t port = 0;     // TCP: data server port
  std::string shm_path;  // shm: Segment::shm_path() of a same-host store
};

// kRetire moves no bytes: it retires the range on the store (the master's,
// see write_epochs.h); `buffer` is unused.
enum class OpKind : uint16_t { kWrite = 1, kRead = 2, kRetire = 3 };

std::string_view OpKindName(OpKind kind);

// The master's signed permission to move bytes of one buffer: the whole
// buffer [offset, offset + size_bytes) until expiry_unix_ms, for the op's
// kind. Each transfer (or striped piece) must lie inside it. An empty
// signature is no grant: a store that checks refuses the op.
struct Grant {
  uint64_t offset = 0;
  uint64_t size_bytes = 0;
  uint64_t expiry_unix_ms = 0;
  std::string signature;  // 32 bytes, from msg::BufferDesc::capability
  // Signed for sealed reads that name a seal only (CapabilityOp::kReadSealed,
  // msg::BufferDesc::sealed_capability): it outlives the lease.
  bool sealed_only = false;
  // The signing master's term (msg::BufferDesc::capability_term).
  uint64_t term = 0;
};

// Puts `grant` into a data-port request header; a signature of the wrong
// size goes out as zeros, which the store refuses.
void SetRequestGrant(const Grant& grant, wire::Request* req);

// Decides whether [offset, offset + len) of a segment may be written or read
// under `grant`. May be called concurrently; must be thread-safe.
using AccessCheck =
    std::function<Status(OpKind op, uint64_t offset, uint64_t len, const Grant& grant)>;

// Allows everything (tests and benchmarks of raw transport speed).
AccessCheck AllowAll();

// One transfer: `len` bytes between `buffer` (local) and `remote_offset` in
// the endpoint's segment. `status` is filled by Transport::Batch.
struct TransferOp {
  OpKind kind = OpKind::kWrite;
  const Endpoint* endpoint = nullptr;  // must outlive the call
  uint64_t remote_offset = 0;
  void* buffer = nullptr;  // source for kWrite, destination for kRead
  size_t len = 0;
  Grant grant;  // the master's grant covering this range
  // A sealed read (write_epochs.h): the transport proves no write touched
  // the range while (and, with `seal` != 0, since) it was read. With `seal`
  // != 0 the op fails REPLICA_IS_GONE unless the range still has that seal;
  // a transport that cannot check fails it NOT_SUPPORTED. On success `seal`
  // is the range's seal (left 0 by a transport that cannot tell).
  bool sealed = false;
  uint64_t seal = 0;
  Status status;
  // Set by Batch with a failed status: the peer could not be reached (the
  // connect failed, or it made no progress for the transport's timeout),
  // rather than refusing the op. Trying it again soon would only wait again.
  bool peer_unreachable = false;
  // Set by FallbackTransport (fallback_transport.h): the name() of the
  // transport that moved the op (empty when none did), and of the last one
  // that failed it and passed it on to the next (empty when none did).
  std::string_view moved_by;
  std::string_view passed_on_by;
};

// Upper bound of ops in one Batch call.
inline constexpr size_t kMaxBatchOps = 4096;

class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string_view name() const = 0;

  // Runs all ops in parallel, sets each op's status, and returns OK or the
  // first failure (by op index). A failed op may have moved part of its
  // bytes; WRITE and READ are idempotent, so retrying the op is safe.
  virtual Status Batch(std::span<TransferOp> ops) = 0;

  // Makes [addr, addr + len) ready for transfers without a registration
  // each (RDMA registers it on every NIC). OK and nothing to do elsewhere.
  virtual Status RegisterBuffer(void* addr, uint64_t len);
  virtual Status UnregisterBuffer(void* addr);

  Status Write(const Endpoint& ep, uint64_t remote_offset, const void* src, size_t len,
               const Grant& grant = {});
  Status Read(const Endpoint& ep, uint64_t remote_offset, void* dst, size_t len,
              const Grant& grant = {});
};

// Checks the shape of a batch (count, null buffers, endpoint set, offset
// overflow) before any byte moves; shared by the implementations.
Status ValidateBatch(std::span<const TransferOp> ops);

}  // namespace mc::transfer

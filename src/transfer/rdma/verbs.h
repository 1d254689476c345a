// The verbs seam: the few libibverbs calls the RDMA transport uses (device
// open and port query, memory registration, RC queue pairs and their state
// changes, RDMA WRITE/READ posts, completion polling), behind an interface so
// slicing, QP scheduling, connection setup and retry logic run in unit tests
// on any host (verbs_fake.h) and over real NICs or soft-RoCE (SystemVerbs,
// verbs_ibv.cc) unchanged.
//
// One VerbsDevice is one opened NIC port (port 1) with one protection domain
// and one completion queue shared by all its QPs. Thread-safe: posts, polls
// and registrations may come from different threads (libibverbs is).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"

namespace mc::transfer {

using Gid = std::array<uint8_t, 16>;

// What a peer needs to address this port, and the limits that shape our use.
struct PortInfo {
  uint16_t lid = 0;   // 0 on RoCE
  Gid gid{};          // the RoCE v2 IPv4-mapped GID when there is one
  uint8_t gid_index = 0;
  uint64_t max_mr_size = 0;  // largest single registration
  uint32_t active_mtu = 0;   // enum ibv_mtu value (1 = 256 .. 5 = 4096)
};

struct MemoryRegion {
  void* addr = nullptr;
  uint64_t length = 0;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  void* handle = nullptr;  // the implementation's (ibv_mr*)
};

struct QueuePair {
  uint32_t qpn = 0;
  void* handle = nullptr;  // the implementation's (ibv_qp*)
};

// The far end of an RC connection.
struct QpPeer {
  uint32_t qpn = 0;
  uint32_t psn = 0;  // the peer's initial send PSN (our receive PSN)
  uint16_t lid = 0;
  Gid gid{};
  uint32_t mtu = 0;  // enum ibv_mtu; the smaller of the two ports' is used
};

enum class WrKind : uint8_t { kWrite = 1, kRead = 2 };

// One RDMA WRITE (local -> remote) or READ (remote -> local), signaled.
struct WorkRequest {
  uint64_t wr_id = 0;
  WrKind kind = WrKind::kWrite;
  uint64_t local_addr = 0;
  uint32_t lkey = 0;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint32_t length = 0;
};

struct Completion {
  uint64_t wr_id = 0;
  uint32_t qpn = 0;
  bool ok = false;
  std::string error;  // ibv_wc_status_str when !ok
};

// Bounds of one QP, applied at creation.
inline constexpr uint32_t kMaxSendWrPerQp = 256;

class VerbsDevice {
 public:
  virtual ~VerbsDevice() = default;
  virtual const std::string& name() const = 0;
  virtual const PortInfo& port() const = 0;

  // Registers [addr, addr + length) for local access and remote WRITE/READ.
  // `length` must not exceed port().max_mr_size.
  virtual Result<MemoryRegion> RegisterMemory(void* addr, uint64_t length) = 0;
  virtual void DeregisterMemory(const MemoryRegion& mr) = 0;

  // An RC QP in RESET on this device's CQ, up to `max_send_wr` outstanding.
  virtual Result<QueuePair> CreateQp(uint32_t max_send_wr) = 0;
  // RESET -> INIT -> RTR -> RTS towards `peer`, sending from `local_psn`.
  // `timeout_exp` and `retry_cnt` are the RC transport timer (4.096 us *
  // 2^timeout_exp) and its retries: together they bound how long a WR to a
  // dead peer waits before completing with an error.
  virtual Status ConnectQp(const QueuePair& qp, const QpPeer& peer, uint32_t local_psn,
                           uint8_t timeout_exp, uint8_t retry_cnt) = 0;
  // Moves the QP to ERROR: its outstanding WRs complete flushed.
  virtual void ErrorQp(const QueuePair& qp) = 0;
  virtual void DestroyQp(const QueuePair& qp) = 0;

  // Posts `wrs` in order on `qp` (one ibv_post_send chain). On failure none
  // of them is known to be posted past the failing one; the error says which.
  virtual Status Post(const QueuePair& qp, std::span<const WorkRequest> wrs) = 0;
  // Up to out.size() completions from the device's CQ; 0 when none is ready.
  virtual Result<size_t> Poll(std::span<Completion> out) = 0;
  // Blocks until the CQ may have a completion or `timeout_ms` passes.
  // Poll and WaitForCompletion are called by one thread per device.
  virtual void WaitForCompletion(int timeout_ms) = 0;
};

class Verbs {
 public:
  virtual ~Verbs() = default;
  virtual Result<std::vector<std::string>> ListDevices() = 0;
  // Opens `name` port 1. INVALID_PARAMS naming the device when it is absent,
  // UNAVAILABLE_IN_CURRENT_STATUS when its port is not ACTIVE.
  virtual Result<std::unique_ptr<VerbsDevice>> Open(const std::string& name) = 0;
};

// libibverbs itself (verbs_ibv.cc).
std::unique_ptr<Verbs> SystemVerbs();

// "mlx5_0,mlx5_1" -> {"mlx5_0", "mlx5_1"}; empty: every device `verbs` lists.
// Each named device must open with an active port, or the error names it.
Result<std::vector<std::unique_ptr<VerbsDevice>>> OpenDevices(Verbs& verbs,
                                                              const std::string& device_list);

}  // namespace mc::transfer

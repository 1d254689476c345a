// Pure pieces of the RDMA transport, tested without verbs: cutting a
// transfer into slices that each fit one WR, and choosing the QP ("lane")
// each slice goes out on.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace mc::transfer {

// Largest slice one WR may carry (a WR's length is 32 bits; RC on every
// NIC we know takes 1 GiB).
inline constexpr uint64_t kMaxSliceBytes = 1ull << 30;
// Attempts of one slice, each on a different lane where one exists, before
// its transfer fails.
inline constexpr uint32_t kMaxSliceAttempts = 3;

struct SliceRange {
  uint64_t offset = 0;  // from the start of the transfer
  uint64_t len = 0;
};

// Cuts [0, len) into slices of at most `slice_bytes` that never cross a
// boundary: `room(off)` says how many bytes from `off` lie before the next
// one (a memory region's end, local or remote); it must be > 0.
std::vector<SliceRange> CutSlices(uint64_t len, uint64_t slice_bytes,
                                  const std::function<uint64_t(uint64_t off)>& room);

// Round-robin over lanes (QPs of every NIC pair of one peer), each with at
// most `max_outstanding` slices in flight; a broken lane is skipped until
// the link is rebuilt. Lanes are ordered NIC-major (lane = nic * qps + qp),
// and Pick strides so consecutive slices go to different NICs first.
// Not thread-safe: its owner locks.
class LaneScheduler {
 public:
  LaneScheduler(size_t nics, size_t qps_per_nic, uint32_t max_outstanding);
  // The next lane with room that is not broken and not `avoid` (the lane a
  // retried slice just failed on; -1 for none), or -1 when none has room.
  // A retried slice falls back to `avoid` only when it is the sole healthy lane.
  int Pick(int avoid = -1);
  void Done(int lane);          // a slice on `lane` completed (either way)
  void MarkBroken(int lane);
  bool broken(int lane) const { return lanes_[lane].broken; }
  bool AnyHealthy() const;
  uint32_t outstanding(int lane) const { return lanes_[lane].outstanding; }
  size_t size() const { return lanes_.size(); }

 private:
  struct Lane {
    uint32_t outstanding = 0;
    bool broken = false;
  };
  bool Usable(size_t i) const;
  size_t nics_, qps_;
  uint32_t max_outstanding_;
  std::vector<Lane> lanes_;
  size_t next_ = 0;  // position in the striped order
};

}  // namespace mc::transfer

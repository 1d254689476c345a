#include "transfer/rdma/rdma_plan.h"

#include <algorithm>
#include <cassert>

namespace mc::transfer {

std::vector<SliceRange> CutSlices(uint64_t len, uint64_t slice_bytes,
                                  const std::function<uint64_t(uint64_t off)>& room) {
  assert(slice_bytes > 0 && slice_bytes <= kMaxSliceBytes);
  std::vector<SliceRange> out;
  for (uint64_t off = 0; off < len;) {
    uint64_t n = std::min({slice_bytes, len - off, room(off)});
    assert(n > 0);
    out.push_back({off, n});
    off += n;
  }
  return out;
}

LaneScheduler::LaneScheduler(size_t nics, size_t qps_per_nic, uint32_t max_outstanding)
    : nics_(nics), qps_(qps_per_nic), max_outstanding_(max_outstanding),
      lanes_(nics * qps_per_nic) {}

bool LaneScheduler::Usable(size_t i) const {
  return !lanes_[i].broken && lanes_[i].outstanding < max_outstanding_;
}

int LaneScheduler::Pick(int avoid) {
  const size_t n = lanes_.size();
  // Striped order: position p is NIC p % nics, QP (p / nics) % qps, so
  // consecutive slices alternate NICs, then QPs.
  for (size_t k = 0; k < n; ++k) {
    size_t p = (next_ + k) % n;
    size_t lane = (p % nics_) * qps_ + (p / nics_);
    if (static_cast<int>(lane) == avoid || !Usable(lane)) continue;
    next_ = (p + 1) % n;
    ++lanes_[lane].outstanding;
    return static_cast<int>(lane);
  }
  if (avoid >= 0 && static_cast<size_t>(avoid) < n && Usable(avoid)) {
    bool other = false;
    for (size_t i = 0; i < n; ++i) other = other || (static_cast<int>(i) != avoid && !lanes_[i].broken);
    if (!other) {
      ++lanes_[avoid].outstanding;
      return avoid;
    }
  }
  return -1;
}

void LaneScheduler::Done(int lane) {
  if (lanes_[lane].outstanding > 0) --lanes_[lane].outstanding;
}

void LaneScheduler::MarkBroken(int lane) { lanes_[lane].broken = true; }

bool LaneScheduler::AnyHealthy() const {
  return std::any_of(lanes_.begin(), lanes_.end(), [](const Lane& l) { return !l.broken; });
}

}  // namespace mc::transfer

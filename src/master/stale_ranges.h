// StaleRanges: the ranges whose objects the master removed or replaced since
// the caller last took them, so the process around the core can retire them
// on their stores before it acknowledges (issue 33, gap A: a client's cached
// location must not serve a removed or replaced version; see
// transfer/write_epochs.h and mooncake-protocol(7), "Direct reads").
//
// Bounded: past kMaxRanges a segment's further ranges collapse into one
// retire of the whole segment (every direct read of it asks the master once
// more; none returns a removed version). Not thread-safe: MasterState's lock.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace mc::master {

struct StaleRange {
  std::string segment;   // the segment's name
  std::string endpoint;  // its store's data port, "host:port"
  uint64_t offset = 0;
  uint64_t size_bytes = 0;
};

class StaleRanges {
 public:
  static constexpr size_t kMaxRanges = 1 << 16;

  struct Raw {
    uint32_t segment;
    uint64_t offset;
    uint64_t size_bytes;  // 0: the whole segment
  };

  void Note(uint32_t segment, uint64_t offset, uint64_t size_bytes) {
    if (ranges_.size() < kMaxRanges) {
      ranges_.push_back({segment, offset, size_bytes});
    } else {
      whole_.insert(segment);
    }
  }
  bool empty() const { return ranges_.empty() && whole_.empty(); }
  std::vector<Raw> Take() {
    std::vector<Raw> out;
    out.swap(ranges_);
    for (uint32_t s : whole_) out.push_back({s, 0, 0});
    whole_.clear();
    return out;
  }

 private:
  std::vector<Raw> ranges_;
  std::set<uint32_t> whole_;
};

}  // namespace mc::master

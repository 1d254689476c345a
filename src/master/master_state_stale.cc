// MasterState: the ranges of removed and replaced objects, for the master
// process to retire on their stores (stale_ranges.h).
#include "master/master_state.h"
#include "master/master_state_internal.h"

namespace mc::master {

void MasterState::NoteStale(uint32_t segment, uint64_t offset, uint64_t size_bytes) {
  if (options_.track_stale_ranges) stale_.Note(segment, offset, size_bytes);
}

void MasterState::NoteStale(const ObjectRecord& rec) {
  if (!options_.track_stale_ranges || !rec.complete()) return;  // never readable
  const uint64_t* b = rec.buffers();
  for (uint32_t i = 0; i < rec.buffer_count; ++i) {
    stale_.Note(BufferSegment(b[i]), BufferOffset(b[i]), BufferSize(rec, i));
  }
}

std::vector<StaleRange> MasterState::TakeStaleRanges() {
  std::vector<StaleRange> out;
  if (stale_.empty()) return out;
  for (const StaleRanges::Raw& r : stale_.Take()) {
    // A segment unmounted since: its store serves none of it any more.
    if (r.segment >= segments_.size() || segments_[r.segment] == nullptr) continue;
    const msg::SegmentDesc& d = segments_[r.segment]->desc;
    out.push_back({d.name, d.endpoint, r.offset, r.size_bytes == 0 ? d.size_bytes : r.size_bytes});
  }
  return out;
}

}  // namespace mc::master

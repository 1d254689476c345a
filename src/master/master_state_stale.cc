// MasterState: the ranges of removed and replaced objects, for the master
// process to retire on their stores (stale_ranges.h).
#include <algorithm>

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

std::vector<StaleRange> MasterState::NextFreeRanges(FreeCursor* cursor, size_t max) const {
  std::vector<StaleRange> out;
  for (; cursor->segment < segments_.size(); ++cursor->segment, cursor->offset = 0) {
    if (segments_[cursor->segment] == nullptr) continue;
    const msg::SegmentDesc& d = segments_[cursor->segment]->desc;
    segments_[cursor->segment]->allocator.ForEachFree(
        cursor->offset, [&](uint64_t offset, uint64_t size_bytes) {
          if (out.size() >= max) return false;
          out.push_back({d.name, d.endpoint, offset, size_bytes});
          cursor->offset = offset + size_bytes;
          return true;
        });
    if (out.size() >= max) break;
  }
  return out;
}

std::vector<StaleRange> MasterState::TakeStaleRanges() {
  std::vector<StaleRange> out;
  if (stale_.empty()) return out;
  std::vector<StaleRanges::Raw> raw = stale_.Take();
  // A segment unmounted since: its store serves none of it any more.
  std::erase_if(raw, [&](const StaleRanges::Raw& r) {
    return r.segment >= segments_.size() || segments_[r.segment] == nullptr;
  });
  for (StaleRanges::Raw& r : raw) {
    if (r.size_bytes == 0) r.size_bytes = segments_[r.segment]->desc.size_bytes;  // all of it
  }
  // Neighbours become one range: a batch of upserts or removals of objects
  // put together costs the stores one RETIRE (one grant signed, one frame)
  // instead of one per object. Only the alignment padding between two
  // objects joins them, which no other object shares a granule with.
  std::sort(raw.begin(), raw.end(), [](const StaleRanges::Raw& a, const StaleRanges::Raw& b) {
    return a.segment != b.segment ? a.segment < b.segment : a.offset < b.offset;
  });
  size_t kept = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    StaleRanges::Raw& last = raw[kept];
    const uint64_t end = SegmentAllocator::AlignUp(last.offset + last.size_bytes);
    if (i > 0 && raw[i].segment == last.segment && raw[i].offset <= end) {
      last.size_bytes = std::max(last.offset + last.size_bytes, raw[i].offset + raw[i].size_bytes) -
                        last.offset;
    } else if (i > 0) {
      raw[++kept] = raw[i];
    }
  }
  raw.resize(raw.empty() ? 0 : kept + 1);
  for (const StaleRanges::Raw& r : raw) {
    const msg::SegmentDesc& d = segments_[r.segment]->desc;
    out.push_back({d.name, d.endpoint, r.offset, r.size_bytes});
  }
  return out;
}

}  // namespace mc::master

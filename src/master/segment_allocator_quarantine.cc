// SegmentAllocator: quarantined ranges (segment_allocator.h, Quarantine).
//
// Why: with one-sided RDMA writers a cached direct read's seal stays sound
// only if the store retired the old object's range before anyone rewrites
// it (transfer/write_epochs.h). When the master could not retire a range
// (masterd/retirer.h: the store timed out or refused), the range must not
// go to a new object until a later retire of it succeeded or every seal of
// the old object expired. The master state keeps the why and the until
// (master_state_quarantine.cc); the allocator only keeps the bytes out of
// circulation: free bytes of a quarantined range leave the free ranges at
// once, bytes of it still owned (by an object placed there before the
// failure was known) are withheld when their owner frees them.
#include <algorithm>
#include <map>
#include <vector>

#include "master/segment_allocator.h"

namespace mc::master {

std::pair<uint64_t, uint64_t> SegmentAllocator::Span(uint64_t offset, uint64_t size_bytes) const {
  const uint64_t a = std::min(offset & ~(kAlignmentBytes - 1), capacity_bytes_);
  const uint64_t e = size_bytes == 0 ? capacity_bytes_
                                     : std::min(capacity_bytes_, offset + AlignUp(size_bytes));
  return {a, std::max(a, e)};
}

void SegmentAllocator::Withhold(uint64_t offset, uint64_t end) {
  if (offset >= end) return;
  withheld_bytes_ += end - offset;
  auto next = withheld_.lower_bound(offset);
  if (next != withheld_.end() && next->first == end) {
    end = next->second;
    next = withheld_.erase(next);
  }
  if (next != withheld_.begin()) {
    auto prev = std::prev(next);
    if (prev->second == offset) {
      prev->second = end;
      return;
    }
  }
  withheld_.emplace(offset, end);
}

uint64_t SegmentAllocator::FreeQuarantined(uint64_t offset, uint64_t size_bytes) {
  const uint64_t end = offset + AlignUp(size_bytes);
  uint64_t at = offset, merged = 0;
  auto b = blocked_.upper_bound(offset);
  if (b != blocked_.begin() && std::prev(b)->second > offset) --b;
  for (; b != blocked_.end() && b->first < end; ++b) {
    if (at < b->first) merged = FreeUnblocked(at, b->first - at);
    const uint64_t w_end = std::min(b->second, end);
    Withhold(std::max(at, b->first), w_end);
    at = std::max(at, w_end);
  }
  if (at < end) merged = FreeUnblocked(at, end - at);
  return merged;
}

void SegmentAllocator::Quarantine(uint64_t offset, uint64_t size_bytes) {
  auto [a, e] = Span(offset, size_bytes);
  if (a >= e) return;
  // Into blocked_, merged with the intervals it overlaps or touches.
  uint64_t lo = a, hi = e;
  auto b = blocked_.upper_bound(a);
  if (b != blocked_.begin() && std::prev(b)->second >= a) --b;
  while (b != blocked_.end() && b->first <= e) {
    lo = std::min(lo, b->first);
    hi = std::max(hi, b->second);
    b = blocked_.erase(b);
  }
  blocked_.emplace(lo, hi);
  // Its free bytes leave the free ranges now.
  std::vector<std::pair<uint64_t, uint64_t>> taken;
  auto f = by_offset_.upper_bound(a);
  if (f != by_offset_.begin() && std::prev(f)->first + std::prev(f)->second > a) --f;
  for (; f != by_offset_.end() && f->first < e; ++f) taken.emplace_back(f->first, f->second);
  for (const auto& [start, size] : taken) {
    EraseFree(by_offset_.find(start));
    const uint64_t stop = start + size;
    if (start < a) InsertFree(start, a - start);
    if (stop > e) InsertFree(e, stop - e);
    Withhold(std::max(start, a), std::min(stop, e));
  }
}

namespace {
// Removes [a, e) from `intervals` (offset -> end, disjoint); returns the
// parts it removed.
std::vector<std::pair<uint64_t, uint64_t>> CutOut(std::map<uint64_t, uint64_t>& intervals,
                                                  uint64_t a, uint64_t e) {
  std::vector<std::pair<uint64_t, uint64_t>> cut;
  auto it = intervals.upper_bound(a);
  if (it != intervals.begin() && std::prev(it)->second > a) --it;
  while (it != intervals.end() && it->first < e) {
    const auto [s, t] = *it;
    it = intervals.erase(it);
    if (s < a) intervals.emplace(s, a);
    if (t > e) it = std::next(intervals.emplace(e, t).first);
    cut.emplace_back(std::max(s, a), std::min(t, e));
  }
  return cut;
}
}  // namespace

void SegmentAllocator::Unquarantine(uint64_t offset, uint64_t size_bytes) {
  auto [a, e] = Span(offset, size_bytes);
  if (a >= e) return;
  (void)CutOut(blocked_, a, e);
  for (const auto& [s, t] : CutOut(withheld_, a, e)) {
    withheld_bytes_ -= t - s;
    FreeUnblocked(s, t - s);
  }
}

bool SegmentAllocator::Quarantined(uint64_t offset, uint64_t size_bytes) const {
  auto [a, e] = Span(offset, size_bytes);
  auto b = blocked_.upper_bound(a);
  if (b != blocked_.begin() && std::prev(b)->second > a) return true;
  return b != blocked_.end() && b->first < e;
}

}  // namespace mc::master

#include "master/segment_allocator.h"

#include <cassert>
#include <iterator>
#include <string>

#include "common/debug_check.h"

namespace mc::master {

SegmentAllocator::SegmentAllocator(uint64_t size_bytes, uint64_t page_align_from)
    : page_align_from_(page_align_from),
      capacity_bytes_(size_bytes & ~(kAlignmentBytes - 1)),
      free_bytes_(0) {
  if (capacity_bytes_ > 0) InsertFree(0, capacity_bytes_);
  assert(free_bytes_ == capacity_bytes_);
}

void SegmentAllocator::InsertFree(uint64_t offset, uint64_t size) {
  assert(size > 0 && offset % kAlignmentBytes == 0 && size % kAlignmentBytes == 0);
  by_offset_.emplace(offset, size);
  by_size_.emplace(size, offset);
  free_bytes_ += size;
}

void SegmentAllocator::EraseFree(std::map<uint64_t, uint64_t>::iterator it) {
  [[maybe_unused]] size_t erased = by_size_.erase({it->second, it->first});
  assert(erased == 1);
  free_bytes_ -= it->second;
  by_offset_.erase(it);
}

std::optional<std::pair<uint64_t, uint64_t>> SegmentAllocator::PageFit(uint64_t size) const {
  // By size from the smallest that holds `size`: the first that holds it
  // at a page boundary. Only ranges shorter than size + kPageBytes - 64 can
  // miss, so the walk ends there at the latest.
  for (auto it = by_size_.lower_bound({size, 0}); it != by_size_.end(); ++it) {
    const auto [range, offset] = *it;
    const uint64_t page = (offset + kPageBytes - 1) / kPageBytes * kPageBytes;
    if (page - offset <= range && range - (page - offset) >= size) return std::make_pair(page, offset);
  }
  return std::nullopt;
}

std::optional<uint64_t> SegmentAllocator::Allocate(uint64_t size_bytes) {
  assert(size_bytes > 0);
  const uint64_t size = AlignUp(size_bytes);
  if (size_bytes >= page_align_from_) {
    auto fit = PageFit(size);
    if (!fit) return std::nullopt;
    const auto [page, offset] = *fit;
    auto range = by_offset_.find(offset);
    const uint64_t end = offset + range->second;
    EraseFree(range);
    if (page > offset) InsertFree(offset, page - offset);
    if (page + size < end) InsertFree(page + size, end - page - size);
    return page;
  }
  auto fit = by_size_.lower_bound({size, 0});
  if (fit == by_size_.end()) return std::nullopt;
  const uint64_t offset = fit->second;
  const uint64_t range_size = fit->first;
  EraseFree(by_offset_.find(offset));
  if (range_size > size) InsertFree(offset + size, range_size - size);
  assert(offset + size <= capacity_bytes_);
  return offset;
}

uint64_t SegmentAllocator::Free(uint64_t offset, uint64_t size_bytes) {
  if (!blocked_.empty()) return FreeQuarantined(offset, size_bytes);
  return FreeUnblocked(offset, size_bytes);
}

uint64_t SegmentAllocator::FreeUnblocked(uint64_t offset, uint64_t size_bytes) {
  uint64_t size = AlignUp(size_bytes);
  assert(size > 0 && offset % kAlignmentBytes == 0 && offset + size <= capacity_bytes_);
  auto next = by_offset_.lower_bound(offset);
  // A double free or a wrong size would overlap a free neighbour: a bug.
  assert(next == by_offset_.end() || next->first >= offset + size);
  if (next != by_offset_.end() && next->first == offset + size) {
    size += next->second;
    auto after = std::next(next);
    EraseFree(next);
    next = after;
  }
  if (next != by_offset_.begin()) {
    auto prev = std::prev(next);
    assert(prev->first + prev->second <= offset);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      size += prev->second;
      EraseFree(prev);
    }
  }
  InsertFree(offset, size);
  return size;
}

bool SegmentAllocator::Reserve(uint64_t offset, uint64_t size_bytes) {
  if (size_bytes == 0 || offset % kAlignmentBytes != 0) return false;
  const uint64_t size = AlignUp(size_bytes);
  if (offset > capacity_bytes_ || size > capacity_bytes_ - offset) return false;
  auto it = by_offset_.upper_bound(offset);
  if (it == by_offset_.begin()) return false;
  --it;
  const uint64_t start = it->first;
  const uint64_t end = it->first + it->second;
  if (end < offset + size) return false;
  EraseFree(it);
  if (start < offset) InsertFree(start, offset - start);
  if (offset + size < end) InsertFree(offset + size, end - offset - size);
  return true;
}

void SegmentAllocator::ReserveSorted(std::span<const std::pair<uint64_t, uint64_t>> used) {
  assert(free_bytes_ == capacity_bytes_);
  by_offset_.clear();
  by_size_.clear();
  free_bytes_ = 0;
  uint64_t at = 0;  // end of the previous used range
  for (const auto& [offset, size] : used) {
    assert(offset >= at && offset % kAlignmentBytes == 0 && size % kAlignmentBytes == 0);
    if (offset > at) InsertFree(at, offset - at);
    at = offset + size;
  }
  assert(at <= capacity_bytes_);
  if (at < capacity_bytes_) InsertFree(at, capacity_bytes_ - at);
  MC_DEBUG_CHECK_OK(CheckInvariants());
}

bool SegmentAllocator::IsFree(uint64_t offset, uint64_t size_bytes) const {
  auto it = by_offset_.upper_bound(offset);
  if (it == by_offset_.begin()) return false;
  --it;
  return it->first + it->second >= offset + size_bytes;
}

bool SegmentAllocator::IsUsed(uint64_t offset, uint64_t size_bytes) const {
  const uint64_t size = AlignUp(size_bytes);
  if (offset > capacity_bytes_ || size > capacity_bytes_ - offset) return false;
  // The last free range starting before the end must end at or before the
  // start (free ranges are disjoint and sorted by offset).
  auto it = by_offset_.lower_bound(offset + size);
  if (it == by_offset_.begin()) return true;
  --it;
  return it->first + it->second <= offset;
}

Status SegmentAllocator::CheckInvariants() const {
  auto broken = [](std::string what) {
    return Error(ErrorCode::INTERNAL_ERROR, "segment allocator: " + std::move(what));
  };
  if (capacity_bytes_ % kAlignmentBytes != 0) return broken("capacity is not aligned");
  if (by_offset_.size() != by_size_.size()) {
    return broken(std::to_string(by_offset_.size()) + " ranges by offset but " +
                  std::to_string(by_size_.size()) + " by size");
  }
  uint64_t sum = 0;
  uint64_t prev_end = 0;
  bool first = true;
  for (const auto& [offset, size] : by_offset_) {
    const std::string at = "free range at " + std::to_string(offset);
    if (size == 0 || offset % kAlignmentBytes != 0 || size % kAlignmentBytes != 0) {
      return broken(at + " is empty or not aligned");
    }
    if (offset > capacity_bytes_ || size > capacity_bytes_ - offset) {
      return broken(at + " ends past the capacity " + std::to_string(capacity_bytes_));
    }
    if (!first && offset < prev_end) return broken(at + " overlaps the one before");
    if (!first && offset == prev_end) return broken(at + " touches the one before (not coalesced)");
    if (by_size_.count({size, offset}) == 0) return broken(at + " is missing from the size index");
    sum += size;
    prev_end = offset + size;
    first = false;
  }
  if (sum != free_bytes_) {
    return broken("free ranges sum to " + std::to_string(sum) + " but free_bytes is " +
                  std::to_string(free_bytes_));
  }
  if (free_bytes_ > capacity_bytes_) return broken("more free bytes than capacity");
  return Status::Ok();
}

uint64_t SegmentAllocator::largest_free_bytes() const {
  return by_size_.empty() ? 0 : by_size_.rbegin()->first;
}

}  // namespace mc::master

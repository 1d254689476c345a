// SegmentAllocator: the free space of one mounted segment.
//
// Hands out aligned byte ranges [offset, offset + size) inside a segment of
// fixed size, best fit, never overlapping, and coalesces neighbouring free
// ranges when a range is returned. Only free ranges are stored, so a full
// segment costs nothing per allocation: the owner of a range (an object's
// buffer) remembers its offset and size and gives both back to Free.
//
// Alignment is 64 bytes: one cache line, enough for RDMA and wide memcpy and
// for two buffers written by different transfers never to share a line, while
// wasting at most 63 bytes per buffer (4 KiB would quadruple the footprint of
// 1 KiB objects). It also lets a buffer's offset be stored as offset / 64.
//
// Objects of kPageAlignFromBytes or more start on a kPageBytes boundary of
// the segment (page-aligned memory, the segment being mapped at a page): the
// store's disk tier offloads and reads them back with O_DIRECT straight from
// and into the segment, where one 64 bytes past a page goes through bounce
// chunks (tier/object_io.h). The gap before such an object stays free for
// smaller ones; at most kPageBytes - 64 bytes of it per object.
//
// Allocate and Free are O(log n) in the number of free ranges, plus for a
// large object the ranges that hold it but only off a page (those shorter
// than its size + kPageBytes - 64, passed over in size order).
// Not thread-safe: the master state machine owns it under its lock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "common/result.h"

namespace mc::master {

class SegmentAllocator {
 public:
  static constexpr uint64_t kAlignmentBytes = 64;
  static constexpr uint64_t kPageBytes = 4096;
  static constexpr uint64_t kPageAlignFromBytes = 64u << 10;

  // Rounds `a` up to the allocation unit.
  static constexpr uint64_t AlignUp(uint64_t a) {
    return (a + kAlignmentBytes - 1) & ~(kAlignmentBytes - 1);
  }

  // The usable size is `size_bytes` rounded down to the alignment.
  // `page_align_from`: the size from which objects start on a page (a
  // test's comparison turns it off with UINT64_MAX).
  explicit SegmentAllocator(uint64_t size_bytes, uint64_t page_align_from = kPageAlignFromBytes);

  // Best fit (smallest free range that holds AlignUp(size_bytes), lowest
  // offset among equals; from page_align_from bytes: at a page boundary
  // inside it); nullopt when no free range is large enough.
  std::optional<uint64_t> Allocate(uint64_t size_bytes);

  // Returns a range from Allocate or Reserve (same size as asked). Returns
  // the size of the free range it became part of after coalescing.
  uint64_t Free(uint64_t offset, uint64_t size_bytes);

  // Quarantine (segment_allocator_quarantine.cc; masterd/retirer.h): no
  // byte of [offset, offset + AlignUp(size_bytes)) is handed out until
  // Unquarantine of it. Its free bytes leave the free ranges now, bytes of
  // it freed later go there too ("withheld": neither free nor owned).
  // `size_bytes` 0: to the segment's end. Cost while nothing is
  // quarantined: one empty() test per Free.
  void Quarantine(uint64_t offset, uint64_t size_bytes);
  // Lifts the quarantine of the range; its withheld bytes become free.
  void Unquarantine(uint64_t offset, uint64_t size_bytes);
  // True when some byte of the range is quarantined.
  bool Quarantined(uint64_t offset, uint64_t size_bytes) const;
  uint64_t withheld_bytes() const { return withheld_bytes_; }

  // Marks exactly [offset, offset + AlignUp(size_bytes)) as used, for
  // rebuilding state from a journal. False (nothing changed) if the range is
  // misaligned, outside the segment or not entirely free.
  bool Reserve(uint64_t offset, uint64_t size_bytes);

  // Marks many ranges as used at once on an entirely free allocator, in one
  // pass (a bulk reload). `used`: (offset, AlignUp(size)) sorted by offset,
  // aligned, inside the segment and not overlapping (the caller checked).
  void ReserveSorted(std::span<const std::pair<uint64_t, uint64_t>> used);

  // True if every byte of the range is free (for tests and assertions).
  bool IsFree(uint64_t offset, uint64_t size_bytes) const;
  // True if no byte of [offset, offset + AlignUp(size_bytes)) is free and
  // the range lies inside the segment (an owner's buffer, for assertions).
  bool IsUsed(uint64_t offset, uint64_t size_bytes) const;

  // O(free ranges): the two indexes hold the same ranges, each aligned,
  // non-empty and inside the segment; ranges neither overlap nor touch (a
  // freed range always coalesced); their sum is free_bytes(), so free +
  // used == capacity. INTERNAL_ERROR naming the first broken rule. For
  // tests and MC_DEBUG_CHECK_OK (common/debug_check.h).
  Status CheckInvariants() const;

  uint64_t capacity_bytes() const { return capacity_bytes_; }
  uint64_t free_bytes() const { return free_bytes_; }
  // Owned bytes: neither free nor withheld by a quarantine.
  uint64_t used_bytes() const { return capacity_bytes_ - free_bytes_ - withheld_bytes_; }
  uint64_t largest_free_bytes() const;
  size_t free_range_count() const { return by_offset_.size(); }
  // Calls fn(offset, size_bytes) for the free ranges from `from` on, by
  // offset, until it returns false.
  template <class Fn>
  void ForEachFree(uint64_t from, Fn&& fn) const {
    for (auto it = by_offset_.lower_bound(from); it != by_offset_.end(); ++it)
      if (!fn(it->first, it->second)) return;
  }

 private:
  void InsertFree(uint64_t offset, uint64_t size);
  uint64_t FreeUnblocked(uint64_t offset, uint64_t size);  // Free without quarantine
  uint64_t FreeQuarantined(uint64_t offset, uint64_t size);  // Free with some
  void Withhold(uint64_t offset, uint64_t end);
  std::pair<uint64_t, uint64_t> Span(uint64_t offset, uint64_t size_bytes) const;
  void EraseFree(std::map<uint64_t, uint64_t>::iterator it);
  // The best-fitting free range that holds `size` at a page boundary, as
  // (the boundary, the range's offset); nullopt when none does.
  std::optional<std::pair<uint64_t, uint64_t>> PageFit(uint64_t size) const;

  uint64_t page_align_from_;
  uint64_t capacity_bytes_;
  uint64_t free_bytes_;
  std::map<uint64_t, uint64_t> by_offset_;          // offset -> size
  std::set<std::pair<uint64_t, uint64_t>> by_size_;  // (size, offset)
  std::map<uint64_t, uint64_t> blocked_;   // quarantined: offset -> end, disjoint
  std::map<uint64_t, uint64_t> withheld_;  // freed inside blocked_: offset -> end
  uint64_t withheld_bytes_ = 0;
};

}  // namespace mc::master

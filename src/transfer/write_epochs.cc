#include "transfer/write_epochs.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace mc::transfer {

namespace {
struct Span {
  uint64_t first, end;  // word indices [first, end)
};
Span RegionSpan(uint64_t offset, uint64_t len) {
  if (len == 0) len = 1;  // an empty range still names the region it sits in
  return {offset >> WriteEpochs::kRegionShift,
          ((offset + len - 1) >> WriteEpochs::kRegionShift) + 1};
}
// The bits of region `i`'s retired mask that [offset, offset + len) touches.
uint64_t Granules(uint64_t i, uint64_t offset, uint64_t len) {
  if (len == 0) len = 1;
  const uint64_t start = i << WriteEpochs::kRegionShift;
  const uint64_t lo = std::max(offset, start) - start;
  const uint64_t hi = std::min(offset + len, start + WriteEpochs::kRegionBytes) - start;
  const uint64_t g0 = lo >> WriteEpochs::kGranuleShift;
  const uint64_t g1 = (hi - 1) >> WriteEpochs::kGranuleShift;  // inclusive
  const uint64_t upto = g1 == 63 ? ~0ull : (1ull << (g1 + 1)) - 1;
  return upto & ~((1ull << g0) - 1);
}
std::atomic<bool> testing_whole_regions{false};
}  // namespace

void WriteEpochs::TestingClearWholeRegionsOnWrite(bool on) { testing_whole_regions.store(on); }

void WriteEpochs::BeginWrite(uint64_t offset, uint64_t len) {
  assert(offset + len <= data_bytes_);
  const Span s = RegionSpan(offset, len);
  const bool whole = testing_whole_regions.load(std::memory_order_relaxed);
  for (uint64_t i = s.first; i < s.end; ++i) {
    words_[i].fetch_add(1 + kInFlightOne, std::memory_order_seq_cst);
    // Space is written only once the master handed it out again, after its
    // retire and the old object's leases: the granules' next seals are the
    // new object's. A neighbour's write clears nothing of another object's.
    const uint64_t mine = whole ? ~0ull : Granules(i, offset, len);
    if ((retired_[i].load(std::memory_order_seq_cst) & mine) != 0) {
      retired_[i].fetch_and(~mine, std::memory_order_seq_cst);
    }
  }
  // The counts must be visible before any byte of the write (seqlock writer).
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void WriteEpochs::Retire(uint64_t offset, uint64_t len) {
  assert(offset + len <= data_bytes_);
  const Span s = RegionSpan(offset, len);
  for (uint64_t i = s.first; i < s.end; ++i) {
    // Marked first: a reader that sees the new count sees the mark.
    retired_[i].fetch_or(Granules(i, offset, len), std::memory_order_seq_cst);
    words_[i].fetch_add(1, std::memory_order_seq_cst);
  }
}

void WriteEpochs::EndWrite(uint64_t offset, uint64_t len) {
  const Span s = RegionSpan(offset, len);
  std::atomic_thread_fence(std::memory_order_release);
  for (uint64_t i = s.first; i < s.end; ++i) {
    const uint64_t was = words_[i].fetch_sub(kInFlightOne, std::memory_order_release);
    assert(was >= kInFlightOne);
    (void)was;
  }
}

namespace {

// The seal of [offset, offset + len) from `word(i)` and `mask(i)`, region i's.
template <typename Word, typename Mask>
uint64_t SealOf(uint64_t offset, uint64_t len, Word&& word, Mask&& mask) {
  const Span s = RegionSpan(offset, len);
  uint64_t sum = 1;
  for (uint64_t i = s.first; i < s.end; ++i) {
    const uint64_t w = word(i);
    if (w >= WriteEpochs::kInFlightOne) return 0;  // a write in flight
    if ((mask(i) & Granules(i, offset, len)) != 0) return 0;
    sum += w & WriteEpochs::kStartedMask;
  }
  return sum == 0 ? 1 : sum;
}

}  // namespace

uint64_t WriteEpochs::RegionCount(uint64_t offset, uint64_t len) {
  const Span s = RegionSpan(offset, len);
  return s.end - s.first;
}

uint64_t WriteEpochs::SealOfWords(const uint64_t* words, const uint64_t* masks, uint64_t offset,
                                  uint64_t len) {
  const uint64_t first = FirstRegion(offset);
  return SealOf(offset, len, [&](uint64_t i) { return words[i - first]; },
                [&](uint64_t i) { return masks[i - first]; });
}

uint64_t WriteEpochs::Seal(uint64_t offset, uint64_t len) const {
  assert(offset + len <= data_bytes_);
  return SealOf(
      offset, len, [&](uint64_t i) { return words_[i].load(std::memory_order_seq_cst); },
      [&](uint64_t i) { return retired_[i].load(std::memory_order_seq_cst); });
}

uint64_t WriteEpochs::SealedCopy(const uint8_t* base, uint64_t offset, uint64_t len, void* dst,
                                 uint64_t expect) const {
  return SealedRead(offset, len, expect, [&] { std::memcpy(dst, base + offset, len); });
}

}  // namespace mc::transfer

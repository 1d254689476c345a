#include "transfer/write_epochs.h"

#include <cassert>
#include <cstring>

namespace mc::transfer {

namespace {
struct Span {
  uint64_t first, end;  // word indices [first, end)
};
Span Regions(uint64_t offset, uint64_t len) {
  if (len == 0) len = 1;  // an empty range still names the region it sits in
  return {offset >> WriteEpochs::kRegionShift,
          ((offset + len - 1) >> WriteEpochs::kRegionShift) + 1};
}
}  // namespace

void WriteEpochs::BeginWrite(uint64_t offset, uint64_t len) {
  assert(offset + len <= data_bytes_);
  const Span s = Regions(offset, len);
  for (uint64_t i = s.first; i < s.end; ++i) {
    const uint64_t was = words_[i].fetch_add(1 + kInFlightOne, std::memory_order_seq_cst);
    // Space is written only once the master handed it out again, after
    // its retire: the region's next seals are the new object's.
    if ((was & kRetiredBit) != 0) words_[i].fetch_and(~kRetiredBit, std::memory_order_seq_cst);
  }
  // The counts must be visible before any byte of the write (seqlock writer).
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void WriteEpochs::Retire(uint64_t offset, uint64_t len) {
  assert(offset + len <= data_bytes_);
  const Span s = Regions(offset, len);
  for (uint64_t i = s.first; i < s.end; ++i) {
    // Marked first: a reader between the two sees a retired region.
    words_[i].fetch_or(kRetiredBit, std::memory_order_seq_cst);
    words_[i].fetch_add(1, std::memory_order_seq_cst);
  }
}

void WriteEpochs::EndWrite(uint64_t offset, uint64_t len) {
  const Span s = Regions(offset, len);
  std::atomic_thread_fence(std::memory_order_release);
  for (uint64_t i = s.first; i < s.end; ++i) {
    const uint64_t was = words_[i].fetch_sub(kInFlightOne, std::memory_order_release);
    assert(was >= kInFlightOne);
    (void)was;
  }
}

uint64_t WriteEpochs::Seal(uint64_t offset, uint64_t len) const {
  assert(offset + len <= data_bytes_);
  const Span s = Regions(offset, len);
  uint64_t sum = 1;
  for (uint64_t i = s.first; i < s.end; ++i) {
    const uint64_t w = words_[i].load(std::memory_order_acquire);
    if (w >= kRetiredBit) return 0;  // a write in flight, or retired
    sum += w & kStartedMask;
  }
  return sum == 0 ? 1 : sum;
}

uint64_t WriteEpochs::SealedCopy(const uint8_t* base, uint64_t offset, uint64_t len, void* dst,
                                 uint64_t expect) const {
  return SealedRead(offset, len, expect, [&] { std::memcpy(dst, base + offset, len); });
}

}  // namespace mc::transfer

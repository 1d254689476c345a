// WriteEpochs: per-region write counters that let a reader prove the bytes it
// copied out of a segment were not overwritten since it last saw them.
//
// Why: a client that remembers where a key lives (a direct read, issue 33)
// reads without asking the master, so nothing stops the master from having
// freed that space and given it to another object meanwhile. Every writer of
// a segment (the store's data port for TCP writes, a same-host client for
// shm writes) counts each write in every region of kRegionBytes it touches,
// BEFORE the first byte lands, and marks it finished after the last one. A
// reader's "seal" of a range is 1 + the sum of the started-write counts of its
// regions, taken while no write is in flight there. Counts only grow, so an
// unchanged seal means no write touched the range since it was taken.
//
// A sealed read (seqlock-style): seal before, copy, acquire fence, seal
// after; the copy is good iff both equal the seal the reader expects (and
// neither is 0, "a write is in flight"). The cost is a false "stale" when a
// neighbour in a shared region is rewritten: the reader then asks the master,
// as it would have without the cache.
//
// Retired ranges (issue 33, gap A): when the master removes or replaces an
// object it retires the object's range on the store before it acknowledges
// (the data port's RETIRE). A retire counts as a write (every seal of the
// range changes) and marks the range's 64-byte granules retired: while a
// granule is retired no seal of a range that holds it can be taken (Seal
// answers 0), so a reader that got the location from the master before the
// removal but reads after the retire cannot learn it. Only a write into a
// granule clears its mark: the master hands the space out again only after
// its retire (masterd/retirer.h) and after the leases on the old object
// ended. Objects start on 64-byte boundaries (master/segment_allocator.h),
// so no two share a granule and a neighbour written into the same 4 KiB
// region clears nothing of a retired object's (it did before, when the mark
// was one bit per region: a reader whose lease predated a forced remove
// and whose first read came after the retire and such a neighbour write
// learnt a seal of the removed version; mooncake-protocol(7), Direct reads).
//
// RDMA (mooncake-protocol(7), "RDMA direct reads"): one-sided writes count
// nowhere and clear no mark. Seals stay sound for cached reads anyway: the
// master reuses a range only after its RETIRE was acknowledged, which moved
// every count of the range (counts only grow, so no later seal equals an
// earlier one) and left marks only a counted write clears -- or, when the
// RETIRE failed, only after the range's quarantine
// (master/master_state_quarantine.cc) outlived every seal naming it. The table is
// registered for RDMA after the data (transfer/rdma/rdma_sealed.h); an RDMA
// reader reads the words and masks and computes SealOfWords.
//
// Table layout: Regions(data_bytes) epoch words, then as many retired-granule
// masks (bit g of mask i: bytes [i * 4096 + g * 64, + 64) are retired).
// Epoch word: low 40 bits started writes, high 24 bits writes in flight.
// The table lives in the segment's shared mapping, after the data, so every
// process that maps the segment shares it (segment.h). Thread-safe and
// process-safe: only atomic operations on the words.
#pragma once

#include <atomic>
#include <cstdint>

namespace mc::transfer {

class WriteEpochs {
 public:
  static constexpr uint32_t kRegionShift = 12;
  static constexpr uint64_t kRegionBytes = 1ull << kRegionShift;
  // Retired marks are kept per granule of 1 << kGranuleShift bytes, the
  // master's allocation alignment: one u64 mask per region.
  static constexpr uint32_t kGranuleShift = 6;
  static_assert(kRegionBytes >> kGranuleShift == 64, "one mask word per region");
  static constexpr uint64_t kInFlightOne = 1ull << 40;
  static constexpr uint64_t kStartedMask = kInFlightOne - 1;

  // Regions (epoch words, and retired masks) of `data_bytes` of segment.
  static uint64_t Regions(uint64_t data_bytes) {
    return (data_bytes + kRegionBytes - 1) >> kRegionShift;
  }
  // Words a table for `data_bytes` of segment needs (epochs and masks).
  static uint64_t Words(uint64_t data_bytes) { return 2 * Regions(data_bytes); }

  // The regions [first, first + count) that [offset, offset + len) touches
  // (an empty range names the region it sits in).
  static uint64_t FirstRegion(uint64_t offset) { return offset >> kRegionShift; }
  static uint64_t RegionCount(uint64_t offset, uint64_t len);
  // Seal() over copies of the range's epoch words and retired masks (an
  // RDMA reader's look): words[0] and masks[0] are region FirstRegion(offset)'s.
  static uint64_t SealOfWords(const uint64_t* words, const uint64_t* masks, uint64_t offset,
                              uint64_t len);

  // Testing only: makes any write clear the retired marks of every region it
  // touches (the per-region mark this replaced), so a test can show what the
  // granule marks prevent. Process-wide.
  static void TestingClearWholeRegionsOnWrite(bool on);

  WriteEpochs() = default;
  // `words` holds Words(data_bytes) zero-initialised (or previously used) words.
  WriteEpochs(std::atomic<uint64_t>* words, uint64_t data_bytes)
      : words_(words), retired_(words + Regions(data_bytes)), data_bytes_(data_bytes) {}
  bool valid() const { return words_ != nullptr; }

  // Before the first byte of a write of [offset, offset + len) lands.
  void BeginWrite(uint64_t offset, uint64_t len);
  // After its last byte landed.
  void EndWrite(uint64_t offset, uint64_t len);
  // The object in [offset, offset + len) is gone: counts as a write and
  // marks its granules retired (see above).
  void Retire(uint64_t offset, uint64_t len);

  // The seal of [offset, offset + len): never 0, except 0 while a write is in
  // flight in one of its regions or one of its granules is retired.
  uint64_t Seal(uint64_t offset, uint64_t len) const;

  // Copies [offset, offset + len) of `base` (the segment) to `dst` and
  // checks the seal around the copy. Returns the seal the copy is good for:
  // `expect` (or, when `expect` is 0, whatever it was), and 0 when the range
  // was being written or no longer matches `expect`: `dst` is then garbage.
  uint64_t SealedCopy(const uint8_t* base, uint64_t offset, uint64_t len, void* dst,
                      uint64_t expect) const;
  // The same around any `copy()` of the range's bytes (a test's hook, a
  // socket send into a staging buffer).
  template <typename Copy>
  uint64_t SealedRead(uint64_t offset, uint64_t len, uint64_t expect, Copy&& copy) const {
    const uint64_t before = Seal(offset, len);
    if (before == 0 || (expect != 0 && before != expect)) return 0;
    copy();
    // The copy's loads come before the second look at the counts (seqlock reader).
    std::atomic_thread_fence(std::memory_order_acquire);
    return Seal(offset, len) == before ? before : 0;
  }

 private:
  std::atomic<uint64_t>* words_ = nullptr;    // epochs, by region
  std::atomic<uint64_t>* retired_ = nullptr;  // retired granules, by region
  uint64_t data_bytes_ = 0;
};

// A RAII write: BeginWrite now, EndWrite at scope exit (no-op on an invalid table).
class EpochWrite {
 public:
  EpochWrite(WriteEpochs& e, uint64_t offset, uint64_t len) : e_(e), off_(offset), len_(len) {
    if (e_.valid()) e_.BeginWrite(off_, len_);
  }
  ~EpochWrite() {
    if (e_.valid()) e_.EndWrite(off_, len_);
  }
  EpochWrite(const EpochWrite&) = delete;
  EpochWrite& operator=(const EpochWrite&) = delete;

 private:
  WriteEpochs& e_;
  uint64_t off_, len_;
};

}  // namespace mc::transfer

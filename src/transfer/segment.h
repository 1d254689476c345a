// Segment: the memory a store contributes to the pool, shareable with
// same-host clients by path.
//
// A segment is one shared mapping of `size_bytes`, backed either by a memfd
// (default) or by a file in /dev/shm, always owner-only (0600). Huge pages are
// tried first (MFD_HUGETLB / MAP_HUGETLB, then madvise(MADV_HUGEPAGE)) and
// dropped silently when the host has none reserved; page_kind() tells which.
//
// Sharing trade-off, and why memfd is the default:
//  - kMemfd: shm_path() is "/proc/<pid>/fd/<n>". Any process of the same user
//    (that may ptrace-read us, the normal case) can open and map it. The
//    kernel frees the memory when the store exits, even on kill -9, once the
//    last client mapping is gone. The path is valid only while the store runs
//    (a client that mapped it keeps its mapping; it must re-resolve after a
//    store restart anyway). Fails for clients when the store is non-dumpable
//    or /proc is mounted with hidepid.
//  - kShmFile: shm_path() is "/dev/shm/mooncake-<pid>-<rand>", created with
//    O_EXCL and mode 0600 and unlinked by the destructor. A kill -9 leaks the
//    file; Create() therefore first removes "mooncake-<pid>-*" files of this
//    user whose <pid> is no longer alive.
// Layout of the shared file: the data [0, size_bytes), then the write epochs
// (write_epochs.h: one epoch word per 4 KiB region, then one retired-granule
// mask per region, at EpochsOffset(size_bytes)), and in
// the file's last kEpochTrailerBytes a trailer naming them: u64 magic
// "MCEPOCH2", u64 data bytes, u64 epochs offset, u64 region shift, u64 flags
// (bit 0: some writes bypass the epochs, RDMA; readers must not trust them).
// Every writer in a process that maps the file counts its writes there.
// Not thread-safe to create/destroy concurrently with use; the memory itself
// is shared and synchronisation of its contents is the caller's business.
#pragma once

#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>

#include "common/ceilings.h"
#include "common/result.h"
#include "transfer/write_epochs.h"

namespace mc::transfer {

enum class SegmentBacking { kMemfd, kShmFile };
enum class PageKind { kHugeTlb, kTransparentHuge, kNormal };

std::string_view PageKindName(PageKind kind);

// Free 2 MiB huge pages (HugePages_Free of /proc/meminfo); 0 if unknown.
uint64_t FreeHugePages();

// What an operator should do so that a segment of `segment_bytes` gets huge
// pages next time, given `free_huge_pages`: one line naming the sysctl and
// the count, or empty when enough are free.
std::string HugePageAdvice(uint64_t segment_bytes, uint64_t free_huge_pages);

struct SegmentOptions {
  uint64_t size_bytes = 0;
  SegmentBacking backing = SegmentBacking::kMemfd;
  bool try_huge_pages = true;
  // Touch every page at creation so the first transfers do not pay faults.
  bool populate = false;
  std::string shm_dir = "/dev/shm";  // kShmFile only
  // Refuse a segment on ordinary pages that the host, the memory cgroup or
  // the tmpfs cannot hold (transfer/memory_budget.h).
  bool check_memory = true;
};

inline constexpr uint64_t kEpochTrailerBytes = 64;
inline constexpr uint64_t kEpochTrailerMagic = 0x3248434f5045434dull;  // "MCEPOCH2", little-endian
inline constexpr uint64_t kEpochsBypassed = 1;
uint64_t EpochsOffset(uint64_t data_bytes);
// Bytes a segment of `data_bytes` needs with its epochs and trailer.
uint64_t SegmentFileBytes(uint64_t data_bytes);
// The epochs of a mapped segment file of `file_bytes` at `base`, read from its
// trailer; an invalid table when there is none, it does not fit, or writes
// bypass it. `data_bytes` gets the data size (0 when there is no trailer).
WriteEpochs EpochsOfMapping(uint8_t* base, uint64_t file_bytes, uint64_t* data_bytes);

// The upper bound of one segment, kMaxSegmentBytes (common/ceilings.h), is
// checked when the segment is created.

class Segment {
 public:
  static Result<std::unique_ptr<Segment>> Create(const SegmentOptions& options);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  uint8_t* base() const { return base_; }
  uint64_t size_bytes() const { return size_bytes_; }
  // Mapped length (size rounded up to the page size in use).
  uint64_t mapped_bytes() const { return mapped_bytes_; }
  // What a same-host process of the same user opens to map this segment.
  const std::string& shm_path() const { return shm_path_; }
  PageKind page_kind() const { return page_kind_; }
  SegmentBacking backing() const { return backing_; }
  // The segment's write epochs (write_epochs.h), shared with every mapper.
  WriteEpochs& epochs() { return epochs_; }
  // Some writes will not count in the epochs (RDMA peers write one-sided):
  // flags the trailer so no reader trusts them, and returns an invalid table.
  void MarkEpochsBypassed();
  bool epochs_bypassed() const { return !epochs_.valid(); }

  // Faults every page of the mapping in, writable, without changing its
  // contents (MADV_POPULATE_WRITE, or touching a byte per page on kernels
  // before 5.14), `chunk_bytes` at a time, checking `stop` between chunks
  // (a default stop_token never stops).
  // Safe while transfers run: the data in a page is never written. Returns
  // the bytes faulted in (all of mapped_bytes() unless stopped). A store runs
  // this on a background thread after start, so its own transfers never pay
  // a first-touch fault (a 4 KiB page fault costs ~10 us on some VMs, which
  // caps a cold copy near 0.4 GB/s).
  uint64_t Prefault(std::stop_token stop = {}, uint64_t chunk_bytes = kPrefaultChunkBytes);
  static constexpr uint64_t kPrefaultChunkBytes = 64ull << 20;

 private:
  Segment() = default;
  Status OpenMemfd(const SegmentOptions& options);
  Status OpenShmFile(const SegmentOptions& options);
  Status MapSmallPages(const SegmentOptions& options);

  uint8_t* base_ = nullptr;
  uint64_t size_bytes_ = 0;
  uint64_t mapped_bytes_ = 0;
  int fd_ = -1;
  std::string shm_path_;
  bool unlink_on_close_ = false;
  PageKind page_kind_ = PageKind::kNormal;
  SegmentBacking backing_ = SegmentBacking::kMemfd;
  WriteEpochs epochs_;
};

// Removes "<dir>/mooncake-<pid>-*" files owned by this user whose pid is not
// alive; returns how many were removed. Called by Segment::Create(kShmFile).
int SweepStaleShmFiles(const std::string& dir);

}  // namespace mc::transfer

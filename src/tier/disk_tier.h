// DiskTier: a store's objects on local disk (NVMe), one checksummed file
// each (tier/object_file.h), under `<path>/objects/`.
//
// The directory is the tier's on-disk index: every file's header names its
// key, size, generation and checksums, and Open() rebuilds the in-memory
// index by reading the headers only (one block per object), deleting
// temporary files left by a crash, files whose length disagrees with their
// header (torn) and older generations of a key. Object bytes are verified
// against their checksum on every read; a file that fails is deleted, its
// key forgotten and the failure counted, so wrong bytes never reach a caller.
//
// I/O runs in the calling thread, with O_DIRECT where the file system allows
// it (else buffered), through one of `max_inflight` lanes (tier/object_io.h):
// each moves an object in chunks of `io_chunk_bytes`, `chunks_in_flight` of
// them at once through io_uring, with the checksum computed while the disk
// works; the lanes' bounce buffers ((chunks_in_flight + 1) x io_chunk_bytes
// each) bound the memory the tier stages, and callers beyond `max_inflight`
// wait. Block-aligned memory (a segment's page-aligned object) moves straight
// to or from the file; other memory is copied through the bounce chunks in
// the checksum's pass. A write goes to a
// temporary file and is renamed into place once complete: a reader or a
// restart sees the whole object or nothing.
//
// The file system's per-object work stays off the caller's thread where it
// can (tier/file_pool.h): a write takes a spare file of its size (created
// and fallocated in the background, or a removed object's file, whose blocks
// are written already) and only renames it; a remove renames the file to a
// spare name (so a crash cannot bring the object back) and the background
// thread keeps or deletes it. Reads keep their files open (tier/fd_cache.h,
// `cached_fds` at most). No fsync unless `sync`: a crash of the machine (not
// of the process) may lose objects written since the last writeback, and a
// file whose data did not reach the disk fails its checksum on read.
//
// Capacity is the caller's `capacity_bytes` (padded file sizes count): a
// write that would pass it is refused (NO_AVAILABLE_HANDLE) and the caller
// decides what to drop. ENOSPC and I/O errors fail the write or read
// (FILE_WRITE_FAIL / FILE_READ_FAIL), are counted, and leave the tier as it
// was. Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "tier/fd_cache.h"
#include "tier/file_pool.h"
#include "tier/object_io.h"

namespace mc::tier {

// The store's defaults, chosen by scripts/bench_ssd.sh (mooncake-store(1)):
// a 4 MiB object as 4 x 1 MiB in flight keeps the disk busy while the CPU
// checksums, where one 4 MiB I/O followed by its checksum left it idle.
inline constexpr uint32_t kDefaultMaxInflight = 4;      // objects at once
inline constexpr uint32_t kDefaultChunksInFlight = 4;   // per object
inline constexpr uint64_t kDefaultIoChunkBytes = 1ull << 20;
// Spare files ready for writes: one per lane keeps each writer supplied.
inline constexpr uint32_t kDefaultSpareFiles = kDefaultMaxInflight;
inline constexpr uint32_t kDefaultCachedFds = 64;
// The test-only crash point's environment variable (TierOptions).
inline constexpr const char* kPauseMidWriteEnv = "MOONCAKE_TEST_TIER_PAUSE_MID_WRITE";

struct TierOptions {
  std::string path;             // created if missing
  uint64_t capacity_bytes = 0;  // 0: refuses every write
  uint32_t max_inflight = kDefaultMaxInflight;
  uint64_t io_chunk_bytes = kDefaultIoChunkBytes;  // a multiple of kBlockBytes
  uint32_t chunks_in_flight = kDefaultChunksInFlight;
  bool io_uring = true;    // else pwrite/pread (also when io_uring cannot start)
  bool direct_io = true;   // O_DIRECT when the file system takes it
  bool sync = false;       // fdatasync each object before its rename
  uint32_t spare_files = kDefaultSpareFiles;  // tier/file_pool.h; 0: none kept
  uint32_t cached_fds = kDefaultCachedFds;    // open files kept for reads
  // A test's crash point: when set, the first write to put a chunk of its
  // data on its (temporary) file creates this file and then waits for ever,
  // so a kill -9 provably lands mid-write. Open() takes it from
  // $MOONCAKE_TEST_TIER_PAUSE_MID_WRITE when empty.
  std::string pause_mid_write_signal;
};

struct DiskObjectInfo {
  std::string key;
  uint64_t size_bytes = 0;
  uint64_t generation = 0;
  uint64_t file_bytes = 0;
};

struct TierCounters {
  uint64_t objects = 0;
  uint64_t used_bytes = 0;       // padded file bytes
  uint64_t capacity_bytes = 0;
  uint64_t writes = 0, write_bytes = 0;
  uint64_t reads = 0, read_bytes = 0;
  uint64_t removes = 0;
  uint64_t checksum_failures = 0;  // reads refused, their files deleted
  uint64_t io_errors = 0;          // failed reads and writes (ENOSPC included)
  uint64_t no_space = 0;           // writes refused by ENOSPC or the capacity
  uint64_t dropped_at_open = 0;    // torn, foreign or superseded files deleted
  uint64_t spare_writes = 0;       // writes into a spare file (no create on the caller's thread)
  bool direct_io = false;          // O_DIRECT in use
  bool io_uring = false;           // chunks go through io_uring
};

class DiskTier {
 public:
  static Result<std::unique_ptr<DiskTier>> Open(const TierOptions& options);
  ~DiskTier();
  DiskTier(const DiskTier&) = delete;
  DiskTier& operator=(const DiskTier&) = delete;

  // Stores `size` bytes under `key`, replacing an older version once the new
  // one is complete.
  Result<DiskObjectInfo> Write(std::string_view key, const void* data, uint64_t size);
  // Reads the whole object into out[0..size_bytes) and verifies it.
  // OBJECT_NOT_FOUND, BUFFER_OVERFLOW (out_size too small),
  // CHECKSUM_MISMATCH (the file is deleted), FILE_READ_FAIL. On any error
  // `out` holds nothing a caller may use.
  Result<uint64_t> Read(std::string_view key, void* out, uint64_t out_size);
  // OBJECT_NOT_FOUND when absent.
  Status Remove(std::string_view key);
  std::optional<DiskObjectInfo> Find(std::string_view key) const;
  // Every object, in key order.
  std::vector<DiskObjectInfo> List() const;
  TierCounters counters() const;
  const std::string& path() const { return options_.path; }
  // Until the background file work (spares, deletes) is done: for tests
  // and benchmarks that want a settled directory.
  void Settle() { pool_->Settle(); }

 private:
  explicit DiskTier(const TierOptions& options);
  Status Scan();
  std::string FileName(uint64_t generation) const;
  ObjectIo* Acquire();
  void Release(ObjectIo* lane);
  Result<int> OpenFile(const std::string& name, int flags);
  // A spare of the object's size, else a file created here: its name and fd.
  Result<SpareFile> TempFile(const DiskObjectInfo& info);
  // A removed or replaced object's file: renamed out of the index's names
  // here, then kept as a spare or deleted by the pool's thread.
  void Retire(const DiskObjectInfo& info);
  Result<std::shared_ptr<CachedFile>> ReadHandle(const DiskObjectInfo& info);
  Status WriteFile(int fd, const DiskObjectInfo& info, const void* data);
  Status ReadFile(int fd, const DiskObjectInfo& info, void* out);
  void PauseMidWrite();

  TierOptions options_;
  FdCache fds_;
  std::unique_ptr<FilePool> pool_;  // after Scan
  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::vector<std::unique_ptr<ObjectIo>> lanes_;
  std::vector<ObjectIo*> free_;
  std::map<std::string, DiskObjectInfo, std::less<>> index_;
  uint64_t next_generation_ = 1;
  uint64_t reserved_bytes_ = 0;  // writes in flight
  TierCounters counters_;
};

}  // namespace mc::tier

// ObjectIo: one caller's lane into the disk tier's object files (issue 31,
// point 5). An object's data moves in chunks of `chunk_bytes`, up to `depth`
// chunks in flight at once through io_uring (liburing), and the CPU's share
// (the CRC-32C, and the copy through a bounce buffer for memory that is not
// block aligned) runs while the disk works on the chunks before it:
//
//  - write: each chunk is submitted, then checksummed while it is in flight
//    (block-aligned memory goes to the disk as is; other memory is
//    copied into one of `depth + 1` bounce chunks, checksummed in the same
//    pass, so `depth` chunks are on their way while the next is copied);
//    the header, which holds the data's checksum, is submitted behind the
//    last chunk;
//  - read: the header and the first `depth` chunks are submitted at once;
//    as each chunk completes, in order, the next takes its place in the
//    ring (into the spare bounce chunk) and it is checksummed (and copied
//    out of its bounce chunk) while `depth` chunks are on their way.
//
// Only block-aligned memory goes straight, though O_DIRECT may take less
// (statx's dio_mem_align: 512 bytes on this virtio disk): a 4 MiB offload
// from memory 512 bytes past a page ran at 30 MB/s against 460 through the
// bounce chunks (every block straddles two pages; medians of 7 runs of
// tier_bench on this machine's ext4, load 12).
//
// The bounce chunks and the header block are registered with the ring
// (fixed buffers), so the kernel pins them once rather than per I/O. Where
// io_uring is unavailable (kernel, seccomp, kernel.io_uring_disabled) the
// same pipeline runs with pwrite/pread, one chunk at a time.
//
// Not thread-safe: one caller at a time (DiskTier hands lanes out).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "common/result.h"
#include "tier/object_file.h"

namespace mc::tier {

struct IoShape {
  uint32_t depth = 4;                // chunks in flight per object
  uint64_t chunk_bytes = 1ull << 20;  // a multiple of kBlockBytes
  bool use_uring = true;             // false: pwrite/pread
};

// How well a lane hid its bounce copies behind the disk (tests, benchmarks).
struct ObjectIoStats {
  uint64_t bounced_chunks = 0;  // chunks copied through a bounce chunk
  // ... of them copied while `depth` other chunks of the object were in the
  // ring (not yet known done): the disk had a full queue during the copy.
  uint64_t copies_behind_full_queue = 0;
};

class ObjectIo {
 public:
  // INVALID_PARAMS for a bad shape, INTERNAL_ERROR when memory is short.
  // Falls back to pwrite/pread (uring() false) when io_uring cannot start.
  static Result<std::unique_ptr<ObjectIo>> Make(const IoShape& shape);
  ~ObjectIo();
  ObjectIo(const ObjectIo&) = delete;
  ObjectIo& operator=(const ObjectIo&) = delete;

  bool uring() const { return ring_ != nullptr; }
  const ObjectIoStats& stats() const { return stats_; }

  // Writes the object file: `h` (its data_crc is computed here) and
  // h.size_bytes bytes from `src`, padded. `after_first_chunk`, when set,
  // runs once the first data chunk is on the file (a test's crash point).
  // errno-style failures come back as FILE_WRITE_FAIL with strerror text.
  Status Write(int fd, ObjectHeader h, const uint8_t* src,
               const std::function<void()>& after_first_chunk = nullptr);
  // Reads a file written by Write for `expect` (key and size) into
  // dst[0..expect.size_bytes): FILE_READ_FAIL for an I/O error,
  // CHECKSUM_MISMATCH when the header is not `expect`'s (key, size,
  // generation) or the data fails its checksum.
  Status Read(int fd, const ObjectHeader& expect, uint8_t* dst);

 private:
  struct Ring;
  struct Chunk;
  explicit ObjectIo(const IoShape& shape);
  Status Submit(bool write, int fd, Chunk& c);
  void ReapOne();                // one completion (io_uring only)
  Status WaitFor(Chunk& c);      // until `c` is done; its error
  void Drain();                  // until nothing is in flight (io_uring only)
  // The object's data runs: straight to or from `user` when it is block
  // aligned (a padded tail through the head area), else through the slots
  // (a write's first one short: the disk waits for its copy).
  // `aligned`: `user` goes to the disk as is.
  std::vector<Chunk> Plan(const ObjectHeader& h, uint8_t* user, bool aligned, bool write);
  Chunk HeadChunk(const ObjectHeader& h);
  int HeadIndex() const { return static_cast<int>(slots_.size()); }  // registered after the slots

  IoShape shape_;
  std::unique_ptr<Ring> ring_;  // null: pwrite/pread
  std::vector<uint8_t*> slots_;  // depth + 1 bounce chunks, block aligned
  uint8_t* head_ = nullptr;      // the header block(s) and a tail block
  uint32_t in_flight_ = 0;
  ObjectIoStats stats_;
};

}  // namespace mc::tier

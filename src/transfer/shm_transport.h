// ShmTransport: same-host fast path. Maps a store's segment file
// (Segment::shm_path(), read/write, MAP_SHARED) once per segment and copies
// directly, no syscall per transfer: writes with StreamCopy (stream_copy.h),
// reads with memcpy.
//
// Access control, honestly: the client writes the store's memory directly, so
// the store cannot check a range before the bytes land. What the store does
// enforce is that only processes of its own user can open the file (0600
// memfd or /dev/shm file). Within that trust boundary the rule "write only
// inside your in-progress put buffer, read only complete replicas" is kept by
// the client library: it passes only ranges taken from a master-issued
// descriptor, and the client installs `check` = GrantBoundsCheck (access.h)
// so each copy must lie inside its op's grant, of the right kind, unexpired.
// That catches this library's own mistakes (a stale descriptor whose lease
// ran out, a range past the buffer), not a hostile process: the signature
// cannot be verified without the store's key, and a process of the same user
// can map the file and write anywhere. Use TCP (--no-shm), where the store
// verifies the master's signature, between mutually distrusting processes.
//
// Writes count in the segment's write epochs (write_epochs.h) around their
// copies; sealed reads (TransferOp::sealed) check them around theirs.
//
// Thread-safe. The transports of a process share one mapping per segment
// file. Mappings are kept until Forget() or destruction; a store that
// restarts gets a new path, and the caller should Forget() the old one.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "transfer/transport.h"
#include "transfer/worker_pool.h"
#include "transfer/write_epochs.h"

namespace mc::transfer {

struct ShmTransportOptions {
  // Threads that share one large copy (the caller counts as one). On this
  // 2-core host transfer_bench shows whether 2 beats 1.
  int copy_threads = 1;
  uint64_t split_threshold_bytes = 8ull << 20;  // copies below this use one thread
  size_t max_mapped_segments = 256;
  // Optional (empty: none): decides whether each op's range may be copied.
  AccessCheck check;
};

class ShmTransport final : public Transport {
 public:
  explicit ShmTransport(ShmTransportOptions options = {});
  ~ShmTransport() override;

  std::string_view name() const override { return "shm"; }
  Status Batch(std::span<TransferOp> ops) override;

  // Drops this transport's mapping of the segment at `shm_path` (no-op if
  // not mapped); it is unmapped once no transport of the process maps it.
  // The caller must not run transfers to it through this transport
  // concurrently.
  void Forget(const std::string& shm_path);

  // How many whole-region page-mapping passes this transport's writes have
  // made (see MapPagesForWrite): one per 2 MiB region per mapping, however
  // many threads, or transports of the process, write there at once.
  uint64_t regions_mapped() const { return regions_mapped_.load(std::memory_order_relaxed); }

 private:
  struct Mapping {
    uint8_t* base = nullptr;
    uint64_t size_bytes = 0;  // of the mapping
    uint64_t data_bytes = 0;  // of the segment's data (segment.h's layout)
    WriteEpochs epochs;       // invalid: no sealed reads, writes count nowhere
    // One bit per kTouchRegionBytes of the segment in each: `claimed` once a
    // thread of this process has begun mapping the region's pages, `touched`
    // once it has finished (see MapPagesForWrite).
    std::unique_ptr<std::atomic<uint64_t>[]> claimed;
    std::unique_ptr<std::atomic<uint64_t>[]> touched;
    ~Mapping();
  };
  // Maps the pages under [offset, offset + len) into this process before a
  // write copies there. A write fault on a fresh shared mapping maps one
  // page; a read fault maps its neighbours too (fault-around), so one load
  // per page of each not-yet-touched region is several times cheaper than
  // letting the copy fault. Measured on our VM: a first 4 MiB copy into a
  // fresh mapping ran at ~2 GB/s faulting, ~9 GB/s after this, ~20 GB/s
  // once mapped. One thread maps a region; a writer that finds it claimed
  // but not finished maps only its own pages: when every writer walked the
  // region, they faulted in step, each thread taking the fault that
  // fault-around spares (16 writers of a bench took 137k faults, 1.3 s of
  // CPU, for a 512 MiB segment; one writer 9k).
  void MapPagesForWrite(Mapping& m, uint64_t offset, uint64_t len);
  Result<std::shared_ptr<Mapping>> Map(const std::string& shm_path);
  // The process's mapping of the open segment file `fd` (`st` its fstat),
  // made if no transport of the process maps it yet.
  static Result<std::shared_ptr<Mapping>> MapFile(int fd, const struct stat& st);
  // A sealed read's first look at the epochs: false (and op.status set)
  // when the range is being written or lost the seal the op names.
  static bool BeginSealedRead(Mapping& m, TransferOp& op);
  static Status Stale(const TransferOp& op);

  const ShmTransportOptions options_;
  std::mutex mu_;  // guards maps_
  std::map<std::string, std::shared_ptr<Mapping>> maps_;
  std::atomic<uint64_t> regions_mapped_{0};
  WorkerPool workers_;
};

}  // namespace mc::transfer

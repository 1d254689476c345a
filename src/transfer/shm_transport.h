// ShmTransport: same-host fast path. Maps a store's segment file
// (Segment::shm_path(), read/write, MAP_SHARED) once per segment and copies
// with memcpy, no syscall per transfer.
//
// Access control, honestly: the client writes the store's memory directly, so
// the store cannot check a range before the bytes land. What the store does
// enforce is that only processes of its own user can open the file (0600
// memfd or /dev/shm file). Within that trust boundary the rule "write only
// inside your in-progress put buffer, read only complete replicas" is kept by
// the client library: it passes only ranges taken from a master-issued
// descriptor, and may install `range_check` to assert that before each copy
// (the same callback shape as the TCP server's AccessCheck). A buggy or
// hostile process of the same user can corrupt the segment; use TCP with an
// AccessCheck between mutually distrusting processes.
//
// Thread-safe. Mappings are kept until Forget() or destruction; a store that
// restarts gets a new path, and the caller should Forget() the old one.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "transfer/transport.h"
#include "transfer/worker_pool.h"

namespace mc::transfer {

struct ShmTransportOptions {
  // Threads that share one large copy (the caller counts as one). On this
  // 2-core host transfer_bench shows whether 2 beats 1.
  int copy_threads = 1;
  uint64_t split_threshold_bytes = 8ull << 20;  // copies below this use one thread
  size_t max_mapped_segments = 256;
  // Optional: asserts [offset, offset + len) came from the master.
  std::function<Status(const Endpoint&, OpKind, uint64_t offset, uint64_t len)> range_check;
};

class ShmTransport final : public Transport {
 public:
  explicit ShmTransport(ShmTransportOptions options = {});
  ~ShmTransport() override;

  std::string_view name() const override { return "shm"; }
  Status Batch(std::span<TransferOp> ops) override;

  // Unmaps the segment at `shm_path` (no-op if not mapped). The caller must
  // not run transfers to it concurrently.
  void Forget(const std::string& shm_path);

 private:
  struct Mapping {
    uint8_t* base = nullptr;
    uint64_t size_bytes = 0;
    ~Mapping();
  };
  Result<std::shared_ptr<Mapping>> Map(const std::string& shm_path);

  const ShmTransportOptions options_;
  std::mutex mu_;  // guards maps_
  std::map<std::string, std::shared_ptr<Mapping>> maps_;
  WorkerPool workers_;
};

}  // namespace mc::transfer

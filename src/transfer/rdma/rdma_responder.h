// RdmaResponder: the store side of RDMA. Registers the segment on every
// selected NIC (regions no larger than max_mr_size), describes it to peers
// (rdma_desc.h) and answers their connection requests with RC QPs of its
// own, connected to theirs. The store never posts: peers WRITE into and READ
// from the segment one-sided, so nothing here polls. QPs are owned by the
// data-port connection that asked for them (Release when it closes).
// Created over no segment (null base, size 0) it describes the regions added
// and removed while it serves instead (AddRegion: the p2p transfer engine's
// registered memory, whose descriptor buffers are those regions, cut by
// max_mr_size, in address order).
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "transfer/rdma/rdma_desc.h"
#include "transfer/rdma/verbs.h"

namespace mc::transfer {

// QPs a store keeps for all its peers at once.
inline constexpr size_t kMaxResponderQps = 4096;

class RdmaResponder {
 public:
  static Result<std::unique_ptr<RdmaResponder>> Create(
      std::vector<std::unique_ptr<VerbsDevice>> devices, const std::string& name, uint8_t* base,
      uint64_t size_bytes, uint64_t max_mr_chunk_bytes = 0);
  ~RdmaResponder();

  RdmaSegmentDesc desc() const;
  // Registers [base, base + len) on every device (INVALID_PARAMS when it
  // overlaps a region, past kMaxRdmaDescBuffers buffers, or a registration
  // fails); RemoveRegion deregisters the region starting at `addr`.
  Status AddRegion(uint8_t* base, uint64_t len);
  Status RemoveRegion(uint64_t addr);
  // Registers the segment's epoch table (rdma_sealed.h): `len` bytes at
  // `at`, which must be where the segment ends, described after the
  // segment's buffers under EpochTableBufferName(nonce). Once, before serving.
  Status AddEpochTable(uint8_t* at, uint64_t len, uint64_t nonce);
  Result<RdmaConnectReply> Connect(uint64_t conn_id, const RdmaConnectRequest& req);
  void Release(uint64_t conn_id);
  size_t qp_count() const;
  std::vector<std::string> device_names() const;

 private:
  RdmaResponder() = default;
  std::vector<std::unique_ptr<VerbsDevice>> devices_;
  RdmaSegmentDesc desc_;
  std::vector<std::vector<MemoryRegion>> mrs_;  // by device, by buffer
  uint64_t chunk_bytes_ = 0;  // largest memory region
  struct Region {
    std::vector<RdmaBufferDesc> buffers;
    std::vector<MemoryRegion> mrs;  // every chunk's, on every device
  };
  // Registers `len` bytes at `base` cut in chunks into *out; the error names
  // `what`. On failure nothing stays registered.
  Status RegisterChunks(uint8_t* base, uint64_t len, const std::string& what, Region* out);
  void Deregister(const Region& r);
  mutable std::mutex mu_;  // guards qps_, count_, regions_, region_buffers_
  std::map<uint64_t, Region> regions_;  // AddRegion's, by start address
  size_t region_buffers_ = 0;
  std::map<uint64_t, std::vector<std::pair<size_t, QueuePair>>> qps_;  // conn -> (device, QP)
  size_t count_ = 0;
};

}  // namespace mc::transfer

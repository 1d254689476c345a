// PoolAllocator: ranges of a fixed-size pool, by offset (a dummy client's
// shared pool: alloc_from_mem_pool, MooncakeHostMemAllocator, and the
// staging copies of calls whose buffers lie outside the pool). First fit
// over a free list keyed by offset; a freed range merges with its free
// neighbours, so the pool never fragments into more ranges than there are
// allocations plus one. Every range starts on kPoolAlignBytes.
//
// Thread-safe: one mutex around each call.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace mc::client {

// Alignment of every allocation: a page, so a buffer handed to an engine is
// as aligned as the reference's (one memfd per allocation there).
inline constexpr uint64_t kPoolAlignBytes = 4096;

class PoolAllocator {
 public:
  explicit PoolAllocator(uint64_t size_bytes);

  // The offset of `size_bytes` (rounded up to the alignment), or nothing
  // when no free range is big enough or size_bytes is 0.
  std::optional<uint64_t> Allocate(uint64_t size_bytes);
  // False for an offset that is not the start of an allocation.
  bool Free(uint64_t offset);

  uint64_t size_bytes() const { return size_bytes_; }
  uint64_t used_bytes() const;
  // Every allocation: (offset, length), by offset.
  std::vector<std::pair<uint64_t, uint64_t>> Used() const;
  // The allocation that holds [offset, offset + len), if any: its start.
  std::optional<uint64_t> Owner(uint64_t offset, uint64_t len) const;

 private:
  const uint64_t size_bytes_;
  mutable std::mutex mu_;
  std::map<uint64_t, uint64_t> free_;  // offset -> length
  std::map<uint64_t, uint64_t> used_;  // offset -> length
  uint64_t used_bytes_ = 0;
};

}  // namespace mc::client

#include "client/pool_allocator.h"

#include <cassert>

namespace mc::client {

PoolAllocator::PoolAllocator(uint64_t size_bytes)
    : size_bytes_(size_bytes / kPoolAlignBytes * kPoolAlignBytes) {
  if (size_bytes_ > 0) free_.emplace(0, size_bytes_);
}

std::optional<uint64_t> PoolAllocator::Allocate(uint64_t size_bytes) {
  if (size_bytes == 0 || size_bytes > size_bytes_) return std::nullopt;
  const uint64_t len = (size_bytes + kPoolAlignBytes - 1) / kPoolAlignBytes * kPoolAlignBytes;
  std::lock_guard lock(mu_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < len) continue;
    const uint64_t at = it->first;
    const uint64_t rest = it->second - len;
    free_.erase(it);
    if (rest > 0) free_.emplace(at + len, rest);
    used_.emplace(at, len);
    used_bytes_ += len;
    assert(used_bytes_ <= size_bytes_);
    return at;
  }
  return std::nullopt;
}

bool PoolAllocator::Free(uint64_t offset) {
  std::lock_guard lock(mu_);
  auto u = used_.find(offset);
  if (u == used_.end()) return false;
  uint64_t at = u->first, len = u->second;
  used_bytes_ -= len;
  used_.erase(u);
  auto next = free_.lower_bound(at);
  if (next != free_.end() && at + len == next->first) {
    len += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == at) {
      prev->second += len;
      return true;
    }
  }
  free_.emplace(at, len);
  return true;
}

uint64_t PoolAllocator::used_bytes() const {
  std::lock_guard lock(mu_);
  return used_bytes_;
}

std::vector<std::pair<uint64_t, uint64_t>> PoolAllocator::Used() const {
  std::lock_guard lock(mu_);
  return {used_.begin(), used_.end()};
}

std::optional<uint64_t> PoolAllocator::Owner(uint64_t offset, uint64_t len) const {
  std::lock_guard lock(mu_);
  auto it = used_.upper_bound(offset);
  if (it == used_.begin()) return std::nullopt;
  --it;
  if (offset - it->first > it->second || len > it->second - (offset - it->first)) {
    return std::nullopt;
  }
  return it->first;
}

}  // namespace mc::client

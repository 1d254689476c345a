#include "tier/fd_cache.h"

#include <unistd.h>

namespace mc::tier {

CachedFile::~CachedFile() {
  if (fd >= 0) close(fd);
}

std::shared_ptr<CachedFile> FdCache::Get(uint64_t generation) {
  std::lock_guard lock(mu_);
  auto it = by_generation_.find(generation);
  if (it == by_generation_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void FdCache::Put(uint64_t generation, std::shared_ptr<CachedFile> file) {
  std::shared_ptr<CachedFile> evicted;  // closed outside the lock
  std::lock_guard lock(mu_);
  if (max_files_ == 0) return;
  auto it = by_generation_.find(generation);
  if (it != by_generation_.end()) {
    it->second->second = std::move(file);
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.emplace_front(generation, std::move(file));
  by_generation_[generation] = lru_.begin();
  if (lru_.size() > max_files_) {
    evicted = std::move(lru_.back().second);
    by_generation_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

void FdCache::Drop(uint64_t generation) {
  std::shared_ptr<CachedFile> dropped;
  std::lock_guard lock(mu_);
  auto it = by_generation_.find(generation);
  if (it == by_generation_.end()) return;
  dropped = std::move(it->second->second);
  lru_.erase(it->second);
  by_generation_.erase(it);
}

size_t FdCache::size() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

}  // namespace mc::tier

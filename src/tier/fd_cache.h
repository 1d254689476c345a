// FdCache: the disk tier's open object files, by generation, so a read does
// not open() its file each time (issue 31, point 5). Bounded: past
// `max_files` the least recently used is closed (once no reader holds it).
// A removed or replaced object's entry is dropped; a reader still holding
// its handle reads the file it opened, which the tier may have renamed to a
// spare and be overwriting: the object's header and checksum then fail, and
// the tier answers from its index (the object is gone), never with the bytes.
// Thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace mc::tier {

// An open file, closed when the last holder lets go.
struct CachedFile {
  int fd = -1;
  explicit CachedFile(int f) : fd(f) {}
  ~CachedFile();
  CachedFile(const CachedFile&) = delete;
  CachedFile& operator=(const CachedFile&) = delete;
};

class FdCache {
 public:
  static constexpr size_t kDefaultMaxFiles = 64;

  explicit FdCache(size_t max_files = kDefaultMaxFiles) : max_files_(max_files) {}
  // The cached file of `generation`, or null.
  std::shared_ptr<CachedFile> Get(uint64_t generation);
  // Caches `file` (replacing an older entry of the generation).
  void Put(uint64_t generation, std::shared_ptr<CachedFile> file);
  void Drop(uint64_t generation);
  size_t size() const;

 private:
  using Lru = std::list<std::pair<uint64_t, std::shared_ptr<CachedFile>>>;
  const size_t max_files_;
  mutable std::mutex mu_;
  Lru lru_;  // most recent first
  std::unordered_map<uint64_t, Lru::iterator> by_generation_;
};

}  // namespace mc::tier

// Whether a new segment fits in the memory this process can really get:
// the host's available memory, the tightest memory limit of its cgroup
// (v2 memory.max or v1 memory.limit_in_bytes, minus what the group already
// uses) and, for a segment file, the free space of its tmpfs. A segment
// asked for more than that would be faulted in page by page until the OOM
// killer ends the store (or, on a bare host, another process), so it is
// refused at start instead. Huge pages reserved in the kernel's pool are
// not counted here: a segment mapped on them already holds its memory.
// Thread-safe (reads /proc and /sys only).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"

namespace mc::transfer {

// Kept free beside a segment for the store's own heap, stacks and sockets
// and for the kernel; a segment must fit with this much to spare.
inline constexpr uint64_t kSegmentHeadroomBytes = 128ull << 20;

struct MemoryFacts {
  std::optional<uint64_t> host_available_bytes;  // MemAvailable
  // The cgroup (this one or an ancestor) with the least room left.
  std::optional<uint64_t> cgroup_limit_bytes;
  uint64_t cgroup_usage_bytes = 0;
  std::string cgroup_file;                       // the limit file it came from
  std::optional<uint64_t> shm_free_bytes;        // tmpfs of a segment file
  uint64_t huge_pages_free = 0;                  // 2 MiB pages in the pool
};

// Reads the facts for a segment; `shm_dir` empty: the segment is a memfd
// (no tmpfs size applies).
MemoryFacts ReadMemoryFacts(const std::string& shm_dir);

// OK if `size_bytes` on ordinary pages fits with kSegmentHeadroomBytes to
// spare in every known bound; else INVALID_PARAMS naming the request, what
// each bound leaves, and the huge pages situation.
Status CheckSegmentFits(uint64_t size_bytes, const MemoryFacts& facts);

}  // namespace mc::transfer

#include "transfer/memory_budget.h"

#include <sys/statvfs.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "common/units.h"

namespace mc::transfer {

namespace {

// cgroup files say "max" (v2) or a huge page-aligned number (v1) for none.
constexpr uint64_t kNoLimitAboveBytes = 1ull << 60;

std::optional<uint64_t> ReadNumber(const std::string& path) {
  std::ifstream f(path);
  std::string word;
  if (!(f >> word) || word == "max") return std::nullopt;
  try {
    uint64_t v = std::stoull(word);
    if (v >= kNoLimitAboveBytes) return std::nullopt;
    return v;
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<uint64_t> MemInfoBytes(const char* field) {
  std::ifstream f("/proc/meminfo");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(f, line)) {
    if (line.compare(0, prefix.size(), prefix) != 0) continue;
    unsigned long long v = 0;
    if (std::sscanf(line.c_str() + prefix.size(), "%llu", &v) != 1) return std::nullopt;
    // HugePages_* are counts; the others are kB.
    return line.find("kB") != std::string::npos ? v * 1024ull : v;
  }
  return std::nullopt;
}

// The cgroup paths of this process: ("" for v2, "memory" for v1) -> path.
std::vector<std::pair<std::string, std::string>> OwnCgroups() {
  std::vector<std::pair<std::string, std::string>> out;
  std::ifstream f("/proc/self/cgroup");
  std::string line;
  while (std::getline(f, line)) {
    // "hierarchy-id:controllers:path"
    size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1);
    std::string path = line.substr(b + 1);
    std::stringstream ss(controllers);
    std::string c;
    bool memory = false;
    while (std::getline(ss, c, ',')) memory |= c == "memory";
    if (controllers.empty() || memory) out.emplace_back(memory ? "memory" : "", path);
  }
  return out;
}

// Room left in `dir`'s cgroup and each ancestor; keeps the tightest.
void ConsiderCgroupTree(const std::string& mount, const std::string& path, bool v2,
                        MemoryFacts* facts) {
  std::string rel = path;
  for (;;) {
    const std::string dir = mount + (rel == "/" ? "" : rel);
    const std::string limit_file = dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes");
    if (auto limit = ReadNumber(limit_file)) {
      uint64_t usage =
          ReadNumber(dir + (v2 ? "/memory.current" : "/memory.usage_in_bytes")).value_or(0);
      uint64_t room = *limit > usage ? *limit - usage : 0;
      uint64_t best_room = facts->cgroup_limit_bytes
                               ? (*facts->cgroup_limit_bytes > facts->cgroup_usage_bytes
                                      ? *facts->cgroup_limit_bytes - facts->cgroup_usage_bytes
                                      : 0)
                               : UINT64_MAX;
      if (room < best_room) {
        facts->cgroup_limit_bytes = *limit;
        facts->cgroup_usage_bytes = usage;
        facts->cgroup_file = limit_file;
      }
    }
    if (rel.empty() || rel == "/") break;
    size_t slash = rel.find_last_of('/');
    rel = slash == 0 ? "/" : rel.substr(0, slash);
  }
}

}  // namespace

MemoryFacts ReadMemoryFacts(const std::string& shm_dir) {
  MemoryFacts facts;
  facts.host_available_bytes = MemInfoBytes("MemAvailable");
  facts.huge_pages_free = MemInfoBytes("HugePages_Free").value_or(0);
  for (const auto& [kind, path] : OwnCgroups()) {
    if (kind.empty()) {
      for (const char* mount : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
        ConsiderCgroupTree(mount, path, /*v2=*/true, &facts);
      }
    } else {
      ConsiderCgroupTree("/sys/fs/cgroup/memory", path, /*v2=*/false, &facts);
    }
  }
  struct statvfs vfs;
  if (!shm_dir.empty() && statvfs(shm_dir.c_str(), &vfs) == 0) {
    facts.shm_free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  }
  return facts;
}

Status CheckSegmentFits(uint64_t size_bytes, const MemoryFacts& facts) {
  const uint64_t need = size_bytes + kSegmentHeadroomBytes;
  std::string why;
  auto short_of = [&](const std::string& what, uint64_t room) {
    if (room >= need) return;
    if (!why.empty()) why += "; ";
    why += what + " leaves " + FormatBytesHuman(room);
  };
  if (facts.host_available_bytes) short_of("the host (MemAvailable)", *facts.host_available_bytes);
  if (facts.cgroup_limit_bytes) {
    uint64_t room = *facts.cgroup_limit_bytes > facts.cgroup_usage_bytes
                        ? *facts.cgroup_limit_bytes - facts.cgroup_usage_bytes
                        : 0;
    short_of("the memory cgroup (" + facts.cgroup_file + " = " +
                 FormatBytesHuman(*facts.cgroup_limit_bytes) + ", " +
                 FormatBytesHuman(facts.cgroup_usage_bytes) + " in use)",
             room);
  }
  if (facts.shm_free_bytes) short_of("the segment file's tmpfs", *facts.shm_free_bytes);
  if (why.empty()) return Status::Ok();
  const uint64_t pages = (size_bytes + (2ull << 20) - 1) / (2ull << 20);
  return Error(ErrorCode::INVALID_PARAMS,
               "a segment of " + FormatBytesHuman(size_bytes) + " does not fit in memory: " +
                   why + " (a segment needs its size plus " +
                   FormatBytesHuman(kSegmentHeadroomBytes) + " to spare); huge pages: " +
                   std::to_string(facts.huge_pages_free) + " of 2 MiB free, " +
                   std::to_string(pages) +
                   " would hold it. Ask for a smaller --segment, or raise the limit");
}

}  // namespace mc::transfer

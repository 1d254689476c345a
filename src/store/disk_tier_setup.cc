#include "store/disk_tier_setup.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "common/units.h"

namespace mc::store {

namespace {
// Without ssd_size: this share of the file system's free space at start,
// leaving room for the rest of the host.
constexpr double kDefaultShareOfFreeSpace = 0.9;
}  // namespace

Result<std::unique_ptr<tier::DiskTier>> OpenDiskTier(const StoreConfig& store) {
  if (store.ssd_offload_path.empty()) return std::unique_ptr<tier::DiskTier>();
  uint64_t capacity = store.ssd_size_bytes;
  if (capacity == 0) {  // most of what the file system has free now
    struct statvfs fs{};
    if (mkdir(store.ssd_offload_path.c_str(), 0700) != 0 && errno != EEXIST)
      return Error(ErrorCode::FILE_OPEN_FAIL, "disk tier: mkdir '" + store.ssd_offload_path +
                                                  "': " + std::strerror(errno));
    if (statvfs(store.ssd_offload_path.c_str(), &fs) != 0)
      return Error(ErrorCode::FILE_OPEN_FAIL, "disk tier: statvfs '" + store.ssd_offload_path +
                                                  "': " + std::strerror(errno));
    capacity = static_cast<uint64_t>(static_cast<double>(fs.f_bavail) * fs.f_frsize *
                                     kDefaultShareOfFreeSpace);
    MC_LOG(INFO) << "disk tier: no ssd_size given, using " << FormatBytesHuman(capacity) << " ("
                 << static_cast<int>(kDefaultShareOfFreeSpace * 100)
                 << "% of the free space of " << store.ssd_offload_path << ")";
  }
  tier::TierOptions options{.path = store.ssd_offload_path, .capacity_bytes = capacity};
  auto opened = tier::DiskTier::Open(options);
  if (!opened.ok())
    return Error(opened.code(), "disk tier at '" + store.ssd_offload_path +
                                    "': " + opened.status().message());
  const tier::TierCounters c = (*opened)->counters();
  MC_LOG(INFO) << "disk tier " << store.ssd_offload_path << ": " << c.objects
               << " objects (" << FormatBytesHuman(c.used_bytes) << ") found from a previous run"
               << (c.dropped_at_open > 0
                       ? ", " + std::to_string(c.dropped_at_open) + " unfinished or torn files deleted"
                       : std::string());
  return std::move(*opened);
}

std::string DescribeDiskTier(const tier::DiskTier* tier) {
  if (tier == nullptr) return "";
  const tier::TierCounters c = tier->counters();
  return ", disk tier " + tier->path() + " (" + FormatBytesHuman(c.used_bytes) + " of " +
         FormatBytesHuman(c.capacity_bytes) + ", " + std::to_string(c.objects) + " objects" +
         (c.direct_io ? ", O_DIRECT" : "") + (c.io_uring ? ", io_uring)" : ", pwrite/pread)");
}

void LogDiskTierCounters(const tier::DiskTier* tier) {
  if (tier == nullptr) return;
  const tier::TierCounters c = tier->counters();
  MC_LOG(INFO) << "disk tier: " << c.objects << " objects (" << FormatBytesHuman(c.used_bytes)
               << "), " << c.writes << " writes, " << c.reads << " reads, " << c.removes
               << " removes, " << c.checksum_failures << " checksum failures, " << c.io_errors
               << " I/O errors, " << c.no_space << " refused for space";
}

}  // namespace mc::store

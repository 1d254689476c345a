// The store's disk tier from [store] ssd_offload_path / ssd_size: opened at
// start (re-adopting the objects a previous run left there), described in
// the ready line and summed up at stop. Thread-safe as tier::DiskTier.
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "config/config.h"
#include "tier/disk_tier.h"

namespace mc::store {

// Null (no tier) when ssd_offload_path is empty; without ssd_size the tier
// may use 90% of the file system's free space at start. The tier's own error
// when the directory cannot be used.
Result<std::unique_ptr<tier::DiskTier>> OpenDiskTier(const StoreConfig& store);

// ", disk tier DIR (1.2 GB of 100 GB, 310 objects, O_DIRECT)"; empty for null.
std::string DescribeDiskTier(const tier::DiskTier* tier);

// One INFO line with the tier's counters, for the store's stop.
void LogDiskTierCounters(const tier::DiskTier* tier);

}  // namespace mc::store

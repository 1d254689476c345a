// What operators see of the disk tier on the admin HTTP endpoint: its
// /metrics families, its part of the summary line and of /query_key.
// Thread-safe (reads the service under its lock).
#pragma once

#include <string>

namespace mc::masterd {

class MasterService;
class PrometheusText;

// mooncake_tier_* families (none without --enable-offload).
void RenderTierMetrics(const MasterService& service, PrometheusText& p);
// " | Disk: 1.2 GB (310 objects), offloads N, promotions N" or empty.
std::string TierSummary(const MasterService& service);
// `key`'s disk replica as JSON members: `,"tier":"memory"` without one;
// `,"tier":"disk"` (or "memory+disk" when `in_memory`) and
// `,"disk":{"disk_id":...,"segment":...,"size":N}` with one. `size`: the
// disk copy's bytes (0 without one).
std::string TierJson(const MasterService& service, const std::string& key, bool in_memory,
                     uint64_t* size);

}  // namespace mc::masterd

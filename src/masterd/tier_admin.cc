#include "masterd/tier_admin.h"

#include "common/json_escape.h"
#include "common/units.h"
#include "masterd/prometheus.h"
#include "masterd/service.h"
#include "masterd/tier_service.h"

namespace mc::masterd {

namespace {
std::string Json(const std::string& s) { return "\"" + JsonEscape(s) + "\""; }
}  // namespace

void RenderTierMetrics(const MasterService& service, PrometheusText& p) {
  const master::MasterCounters m = service.Counters();  // before the lock WithTier takes
  service.WithTier([&](const TierService* tier) {
    if (tier == nullptr) return;
    const TierCounters& c = tier->counters();
    const auto& disks = tier->disks();
    auto d = [](uint64_t v) { return static_cast<double>(v); };
    p.Gauge("mooncake_tier_memory_bytes", "Bytes of objects in memory", d(m.allocated_bytes));
    p.Gauge("mooncake_tier_memory_objects", "Objects in memory", d(m.key_count));
    p.Gauge("mooncake_tier_disk_bytes", "Bytes of objects on the stores' disk tiers",
            d(disks.bytes()));
    p.Gauge("mooncake_tier_disk_objects", "Objects on the stores' disk tiers", d(disks.objects()));
    uint64_t capacity = 0;
    for (const auto& [id, disk] : disks.disks()) capacity += disk.capacity_bytes;
    p.Gauge("mooncake_tier_disk_capacity_bytes", "Bytes the stores' disk tiers may hold",
            d(capacity));
    p.Counter("mooncake_tier_offloads_total", "Objects written to a disk tier at the watermark",
              d(c.offloads));
    p.Counter("mooncake_tier_offload_bytes_total", "Bytes written to disk tiers", d(c.offload_bytes));
    p.Counter("mooncake_tier_offload_failures_total",
              "Offloads that failed (no space, I/O error): evicted instead", d(c.offload_failures));
    p.Counter("mooncake_tier_stages_total", "Disk objects read into memory for a get", d(c.stages));
    p.Counter("mooncake_tier_promotions_total", "Disk objects kept in memory after a read",
              d(c.promotions));
    p.Counter("mooncake_tier_disk_evictions_total", "Objects dropped from a full disk tier (LRU)",
              d(c.disk_evictions));
    p.Counter("mooncake_tier_checksum_failures_total",
              "Disk replicas dropped because they failed their checksum", d(c.checksum_failures));
    p.Counter("mooncake_tier_io_errors_total", "Disk-tier reads and writes that failed",
              d(c.io_errors));
    p.Counter("mooncake_tier_readopted_total", "Disk objects re-adopted from a store's announce",
              d(c.readopted));
    p.Counter("mooncake_tier_refused_at_announce_total",
              "Announced disk objects the master had no record of (deleted)",
              d(c.refused_at_announce));
    p.Counter("mooncake_tier_polls_total", "Stores' calls for disk-tier work answered",
              d(c.polls));
    p.Counter("mooncake_tier_held_puts_total",
              "Times a put or staging read waited for offloads in flight", d(c.held_puts));
    p.Counter("mooncake_tier_dropped_total",
              "Objects evicted from memory without a disk copy (lost to both tiers)",
              d(c.dropped));
  });
}

std::string TierSummary(const MasterService& service) {
  return service.WithTier([&](const TierService* tier) -> std::string {
    if (tier == nullptr) return "";
    const TierCounters& c = tier->counters();
    return " | Disk: " + FormatBytesHuman(tier->disks().bytes()) + " (" +
           std::to_string(tier->disks().objects()) + " objects), offloads " +
           std::to_string(c.offloads) + ", promotions " + std::to_string(c.promotions) +
           ", disk evictions " + std::to_string(c.disk_evictions) + ", checksum failures " +
           std::to_string(c.checksum_failures);
  });
}

std::string TierJson(const MasterService& service, const std::string& key, bool in_memory,
                     uint64_t* size) {
  *size = 0;
  return service.WithTier([&](const TierService* tier) -> std::string {
    const master::DiskReplicas::Entry* e = tier ? tier->disks().Find(key) : nullptr;
    if (e == nullptr) return ",\"tier\":\"memory\"";
    *size = e->size_bytes;
    const master::DiskReplicas::Disk* disk = tier->disks().FindDisk(e->disk_id);
    return std::string(",\"tier\":\"") + (in_memory ? "memory+disk" : "disk") +
           "\",\"disk\":{\"disk_id\":" + Json(e->disk_id) +
           ",\"segment\":" + Json(disk ? disk->segment_name : "") +
           ",\"size\":" + std::to_string(e->size_bytes) + "}";
  });
}

}  // namespace mc::masterd

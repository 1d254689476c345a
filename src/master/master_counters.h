// MasterCounters: what the master's metrics endpoint exports, as plain
// numbers. Gauges are recomputed on read; totals only grow. Plain value.
#pragma once

#include <cstdint>

namespace mc::master {

struct OpCounter {
  uint64_t requests = 0;
  uint64_t failures = 0;
};

struct MasterCounters {
  // Gauges.
  uint64_t allocated_bytes = 0;
  uint64_t capacity_bytes = 0;
  uint64_t key_count = 0;           // complete and in-flight objects
  uint64_t soft_pinned_count = 0;
  uint64_t active_clients = 0;
  uint64_t segment_count = 0;

  // Per operation (batch items count in the single operation's counter too).
  OpCounter mount_segment, unmount_segment, ping;
  OpCounter put_start, put_end, put_revoke;
  OpCounter get_replica_list, exist_key, remove, remove_all, list_keys;
  OpCounter batch_put_start, batch_put_end, batch_put_revoke;
  OpCounter batch_get_replica_list, batch_exist_key;

  // Eviction: runs (background or inside a PutStart) that evicted something.
  uint64_t successful_evictions = 0;
  uint64_t evicted_keys = 0;
  uint64_t evicted_bytes = 0;
  // The eviction policy's own view (EvictionStats): victims it chose by
  // plain recency, and how often its duel changed its mode.
  uint64_t victims_by_recency = 0;
  uint64_t eviction_mode_switches = 0;

  // Housekeeping done by Tick.
  uint64_t expired_clients = 0;
  uint64_t discarded_puts = 0;
  uint64_t expired_pins = 0;

  // Read-lease releases (ReleaseLeases): reads whose release counted, and
  // leases that ended early because their last counted read was released.
  uint64_t released_reads = 0;
  uint64_t leases_ended_by_release = 0;
};

}  // namespace mc::master

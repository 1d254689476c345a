// Every ceiling that more than one module relies on, defined once.
//
// The wire bounds are what a decoder accepts from any peer
// (mooncake-protocol(7)); the master applies its own configured limits
// (max_batch, max_key_size) on top, and the config refuses a setting above
// the ceiling it feeds (config/registry.cc), so no layer clamps silently.
// Plain constants: thread-safe. (Not named limits.h: each module folder is
// on its own include path, and <limits.h> must stay the system header.)
#pragma once

#include <cstddef>
#include <cstdint>

namespace mc {

// ---- wire (src/proto): a decoder refuses anything larger ----
inline constexpr size_t kMaxStringBytes = 64u << 10;    // keys, names, paths, cursors
inline constexpr size_t kMaxMessageBytes = 4096;        // error messages (encoder truncates)
inline constexpr size_t kMaxBatchItems = 65536;         // batch elements, listed keys
inline constexpr size_t kMaxWireReplicas = 256;         // replicas in one decoded reply
inline constexpr size_t kMaxBuffersPerReplica = 65536;  // stripes of one replica
inline constexpr size_t kMaxListedSegments = 65536;     // segments in ClusterStatus

// ---- the master's state machine (src/master) ----
inline constexpr uint32_t kMaxReplicas = 16;            // replicas of one object
inline constexpr uint32_t kMaxBuffersPerObject = 4096;  // replicas x stripes

// ---- data plane (src/transfer) ----
inline constexpr uint64_t kMaxSegmentBytes = 1ull << 40;  // one store segment (1 TiB)
inline constexpr uint32_t kMaxTcpStreams = 64;            // connections one transfer stripes over

// ---- master HA (src/masterd/ha_log) ----
inline constexpr uint32_t kMaxHaEntriesInFlight = 64;     // HA log entries etcd holds at once
inline constexpr uint64_t kMaxHaLingerUs = 100000;        // [ha] linger: what a put may wait more

}  // namespace mc

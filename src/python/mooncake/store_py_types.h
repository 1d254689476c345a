// The replica descriptors get_replica_desc and batch_get_replica_desc
// return, shaped as the reference's (ReplicaDescriptor, MemoryDescriptor,
// Descriptor); mooncake's replicas are all in memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mooncake/client.h"

namespace mooncake_py {

enum class ReplicaStatus : uint8_t {
  kUndefined = 0, kInitialized, kProcessing, kComplete, kRemoved, kFailed,
};

// One buffer: `buffer_address` is its byte offset inside its segment.
struct BufferDescriptor {
  uint64_t size = 0;
  uint64_t buffer_address = 0;
  std::string transport_endpoint;
  std::string segment_name;
};

// `buffer_descriptor` is the replica's first buffer (the reference has one
// per replica); `buffer_descriptors` all of them, for a striped replica.
struct MemoryDescriptor {
  BufferDescriptor buffer_descriptor;
  std::vector<BufferDescriptor> buffer_descriptors;
};

struct DiskDescriptor {
  std::string file_path;
  uint64_t object_size = 0;
};

struct ReplicaDescriptor {
  ReplicaStatus status = ReplicaStatus::kUndefined;
  MemoryDescriptor memory;
  bool on_disk = false;  // a store's disk tier copy: the reference's LOCAL_DISK
  uint64_t disk_size = 0;
};

inline ReplicaDescriptor ToDescriptor(const mooncake::ReplicaInfo& r) {
  ReplicaDescriptor d;
  d.status = r.complete ? ReplicaStatus::kComplete : ReplicaStatus::kProcessing;
  d.on_disk = r.on_disk;
  d.disk_size = r.disk_size_bytes;
  for (const auto& b : r.buffers) {
    d.memory.buffer_descriptors.push_back({b.size_bytes, b.offset, b.endpoint, b.segment_name});
  }
  if (!d.memory.buffer_descriptors.empty()) d.memory.buffer_descriptor = d.memory.buffer_descriptors[0];
  return d;
}

}  // namespace mooncake_py

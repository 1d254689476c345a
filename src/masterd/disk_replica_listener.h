// DiskReplicaListener: where the master's disk-tier records go (issue 31).
//
// TierService's changes to its disk replicas (masterd/tier_service.h) that
// must survive the master: `key` has a copy on the disk named `disk_id`, or
// no longer has one. A single master keeps them in its SQLite journal
// (masterd::Journal), an HA leader in its HA log (masterd::HaLog), where
// standbys apply them to their image. Called under the master's lock, in
// the order of the changes and of the StateListener's calls (the service
// hands its pending disk records over before each StateListener call, so
// an offload's disk replica is recorded before its memory copy is dropped).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/result.h"

namespace mc::masterd {

class DiskReplicaListener {
 public:
  virtual ~DiskReplicaListener() = default;
  virtual void OnDiskReplica(const std::string& key, const std::string& disk_id,
                             uint64_t size_bytes) = 0;
  virtual void OnDiskReplicaRemoved(const std::string& key) = 0;
};

// Visits one durable disk replica (a load before serving).
using DiskReplicaVisitor =
    std::function<void(const std::string& key, const std::string& disk_id, uint64_t size_bytes)>;
// Calls the visitor for every durable disk replica of a source (a journal,
// an HA image).
using DiskReplicaLoader = std::function<Status(const DiskReplicaVisitor&)>;

}  // namespace mc::masterd

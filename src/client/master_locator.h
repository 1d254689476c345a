// Where the master is: master_server_address as one host:port, a plain list
// of masters ("h1:50051,h2:50051": the one that answers leads, since
// standbys keep their RPC port closed), or the reference's
// "etcd://h1:2379,h2:2379", whose leader key names the leader
// (ha/leader_lookup.h; the cluster from MC_STORE_CLUSTER_ID).
// rpc::MasterClient asks before each connection attempt, so calls that
// find the old leader gone move to the new one within its retries.
// Thread-safe.
#pragma once

#include <functional>
#include <string>

#include "common/result.h"

namespace mc::client {

// Null for a single host:port (nothing to locate). `moved_on`: the last
// address failed; a list then tries its next entry, etcd is asked again.
std::function<Result<std::string>(bool moved_on)> MasterLocator(const std::string& address);

}  // namespace mc::client

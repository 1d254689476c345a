// Finding the master that leads a cluster, for clients and stores given
// master_server_address = "etcd://h1:2379,h2:2379" (the reference's form):
// the leader key (ha/election.h) holds the leader's RPC address.
// Thread-safe (a fresh etcd connection per call: lookups are rare, at
// connect and after a failover).
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace mc::ha {

bool IsEtcdAddress(std::string_view master_address);

// The leader's "host:port". UNAVAILABLE_IN_CURRENT_STATUS when no master
// leads now (an election is under way), RPC_FAIL when etcd did not answer.
Result<std::string> LookupLeader(std::string_view etcd_address, const std::string& cluster);

// The cluster name a client uses: MC_STORE_CLUSTER_ID (the reference's
// variable) when set, else kDefaultClusterName.
std::string ClientClusterName();

}  // namespace mc::ha

#include "ha/leader_lookup.h"

#include <cstdlib>

#include "ha/election.h"
#include "ha/etcd_http.h"

namespace mc::ha {

bool IsEtcdAddress(std::string_view master_address) {
  return master_address.substr(0, 7) == "etcd://";
}

Result<std::string> LookupLeader(std::string_view etcd_address, const std::string& cluster) {
  MC_ASSIGN_OR_RETURN(HaKeys keys, HaKeys::For(cluster));
  MC_ASSIGN_OR_RETURN(auto etcd, EtcdHttp::Open(etcd_address, {.connect_timeout_us = 300000,
                                                               .request_timeout_us = 1000000}));
  MC_ASSIGN_OR_RETURN(std::vector<KeyValue> kvs, Get(*etcd, keys.leader));
  if (kvs.empty() || kvs[0].value.empty()) {
    return Error(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                 "no master leads cluster '" + cluster + "' now (etcd " +
                     std::string(etcd_address) + ")");
  }
  return kvs[0].value;
}

std::string ClientClusterName() {
  const char* env = std::getenv("MC_STORE_CLUSTER_ID");
  return env && *env ? std::string(env) : std::string(kDefaultClusterName);
}

}  // namespace mc::ha

#include "client/replica_order.h"

#include <algorithm>

namespace mc::client {

ReadPlan ReadOrder(const std::vector<msg::ReplicaDesc>& replicas,
                   const std::function<bool(const msg::BufferDesc&)>& same_host,
                   const UnreachableStores& unreachable) {
  ReadPlan plan;
  for (size_t i = 0; i < replicas.size(); ++i) {
    const Status* down = nullptr;
    for (const msg::BufferDesc& b : replicas[i].buffers) {
      auto it = unreachable.find(b.endpoint);
      if (it != unreachable.end()) {
        down = &it->second;
        break;
      }
    }
    if (down == nullptr) {
      plan.order.push_back(i);
    } else if (plan.skipped.ok()) {
      plan.skipped = *down;
    }
  }
  auto local = [&](size_t i) {
    return !replicas[i].buffers.empty() && same_host(replicas[i].buffers[0]);
  };
  std::stable_partition(plan.order.begin(), plan.order.end(), local);
  return plan;
}

}  // namespace mc::client

// ReadOrder: which replicas a get tries, and in what order.
//
// Same-host replicas first (the fastest path), then the master's order. A
// replica with a buffer on a store this call already found unreachable (its
// connect failed, or it made no progress for transfer_timeout) is left out:
// trying it again would only wait out the timeout again, and no stale or
// partial bytes may come from a store that failed mid-read anyway.
// Pure function of its arguments; thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "msg/messages.h"

namespace mc::client {

// "host:port" of a buffer's store, the key of an unreachable store.
using UnreachableStores = std::map<std::string, Status>;

struct ReadPlan {
  std::vector<size_t> order;  // indices into the replica list, in try order
  // OK, or why a replica was left out (the first such store's failure): the
  // get's error when `order` is empty.
  Status skipped;
};

ReadPlan ReadOrder(const std::vector<msg::ReplicaDesc>& replicas,
                   const std::function<bool(const msg::BufferDesc&)>& same_host,
                   const UnreachableStores& unreachable);

}  // namespace mc::client

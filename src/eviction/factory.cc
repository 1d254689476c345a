// MakeEvictionPolicy: the names operators write in the config.
#include "eviction/adaptive.h"
#include "eviction/lru.h"
#include "eviction/policy.h"
#include "eviction/probation.h"

namespace mc::master {

std::unique_ptr<EvictionPolicy> MakeEvictionPolicy(std::string_view name,
                                                   size_t capacity_hint_objects,
                                                   IdSpace ids) {
  if (name == "adaptive")
    return std::make_unique<AdaptivePolicy>(capacity_hint_objects, /*duel=*/true, ids);
  if (name == "probation") return std::make_unique<ProbationPolicy>(capacity_hint_objects, ids);
  if (name == "lru") return std::make_unique<ClockPolicy>(capacity_hint_objects, ids);
  return nullptr;
}

}  // namespace mc::master

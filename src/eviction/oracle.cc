// Admission-oracle yardsticks (oracle.h): exact LRU fed a mask made from the
// whole trace.
#include "eviction/oracle.h"

#include <unordered_map>

namespace mc::bench {
namespace {

double Replay(const Trace& trace, size_t capacity_blocks, AdmissionMask admit) {
  auto cache = MakeAdmittingLruCache(capacity_blocks, std::move(admit));
  return ReplayTrace(trace, *cache).hit_ratio();
}

}  // namespace

double DeadBlockBypassLruHitRatio(const Trace& trace, size_t capacity_blocks) {
  std::vector<std::vector<uint64_t>> next = NextUses(trace);
  AdmissionMask admit(next.size());
  for (size_t r = 0; r < next.size(); ++r) {
    admit[r].reserve(next[r].size());
    for (uint64_t n : next[r]) admit[r].push_back(n != kNeverAgain);
  }
  return Replay(trace, capacity_blocks, std::move(admit));
}

double OneShotChainBypassLruHitRatio(const Trace& trace, size_t capacity_blocks) {
  std::unordered_map<uint64_t, uint64_t> heads;  // chain head -> requests starting with it
  for (const TraceRequest& req : trace.requests) {
    if (!req.hash_ids.empty()) ++heads[req.hash_ids.front()];
  }
  AdmissionMask admit(trace.requests.size());
  std::unordered_map<uint64_t, uint64_t> seen;  // chain head -> requests so far
  for (size_t r = 0; r < trace.requests.size(); ++r) {
    const std::vector<uint64_t>& ids = trace.requests[r].hash_ids;
    if (ids.empty()) continue;
    const bool returns = ++seen[ids.front()] < heads[ids.front()];
    admit[r].assign(ids.size(), returns);
  }
  return Replay(trace, capacity_blocks, std::move(admit));
}

}  // namespace mc::bench

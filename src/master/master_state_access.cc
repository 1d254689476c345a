// MasterState::ReportAccesses: the hits of clients' direct-read caches
// (issue 33), which never ask the master, reach eviction in batches.
#include <algorithm>

#include "master/master_state.h"

namespace mc::master {

uint64_t MasterState::ReportAccesses(const msg::AccessReport& report, uint64_t now_us) {
  (void)now_us;
  uint64_t counted = 0;
  for (const msg::KeyAccess& a : report.accesses) {
    auto it = objects_.find(a.key);
    if (it == objects_.end() || !it->record.complete() || a.count == 0) continue;
    const ObjectId id = IdOf(it->record);
    const uint32_t n = std::min(a.count, kMaxReportedAccessesPerKey);
    for (uint32_t i = 0; i < n; ++i) policy_->OnAccess(id);
    ++counted;
  }
  return counted;
}

}  // namespace mc::master

// MasterService: retiring removed and replaced objects on their stores
// before the removal is answered (retirer.h, issue 33 gap A).
#include "common/capability.h"
#include "masterd/retirer.h"
#include "masterd/service.h"

namespace mc::masterd {

namespace {
// A retire grant is used at once by the master itself; a short life is enough.
constexpr uint64_t kRetireGrantTtlMs = 60000;
}  // namespace

void MasterService::SetRetirer(Retirer* retirer) {
  std::lock_guard<std::mutex> lock(mu_);
  retirer_.store(retirer);
  state_->set_track_stale_ranges(retirer != nullptr);
}

uint64_t MasterService::RetireLocked() {
  Retirer* retirer = retirer_.load();
  if (retirer == nullptr) return 0;
  std::vector<master::StaleRange> stale = state_->TakeStaleRanges();
  if (stale.empty()) return retirer->Submit({});
  const uint64_t wall_ms = clock_.UnixMs();
  std::vector<Retirer::Item> items;
  items.reserve(stale.size());
  for (const master::StaleRange& s : stale) {
    Retirer::Item item{s.endpoint, {s.offset, s.size_bytes, {}}};
    transfer::Grant& g = item.range.grant;
    g.offset = s.offset;
    g.size_bytes = s.size_bytes;
    g.expiry_unix_ms = wall_ms + kRetireGrantTtlMs;
    g.term = grant_term();
    auto key = segment_keys_.find(s.segment);
    if (key != segment_keys_.end()) {  // a store that gave no key checks nothing
      CapabilityGrant c{CapabilityOp::kRetire, key->second.incarnation, s.offset, s.size_bytes,
                        g.expiry_unix_ms, g.term};
      g.signature = SignCapability(key->second.access_key, c);
    }
    items.push_back(std::move(item));
  }
  return retirer->Submit(std::move(items));
}

void MasterService::AwaitRetired(uint64_t ticket) {
  if (ticket == 0) return;
  if (Retirer* r = retirer_.load(); r != nullptr) (void)r->Await(ticket);
}

}  // namespace mc::masterd

// MasterState: the quarantine of ranges whose RETIRE failed.
//
// The hole it closes (mooncake-protocol(7), "RDMA direct reads"): a cached
// direct read over RDMA trusts the store's epochs, and a one-sided RDMA
// WRITE moves none. What keeps a cached seal of a removed object from
// matching the bytes of the next object written there is the RETIRE the
// master sends before it hands the space out again (it moves every count
// of the range and leaves marks only a counted write clears). The retirer
// does not hold the master up for a store that does not answer
// (masterd/retirer.h), so a failed RETIRE used to leave the range free:
// the next object written there by RDMA kept the old seals valid for up to
// kSealedReadGrantTtlUs. Now the master process quarantines such a range:
// it goes to no new object until
//   (a) a later RETIRE of it succeeded (the retirer retries it), or
//   (b) kSealedReadGrantTtlUs and a margin passed since the failure, so
//       every grant and cached location naming the old seal has expired, or
//   (c) its segment is dropped (unmounted, its store declared dead): the
//       space goes away; a store that mounts it again retires its whole
//       segment in its epochs first (store/segment_host.cc, Reincarnate),
//       and a restarted store has a new nonce, so no old seal matches.
// Only failed ranges are quarantined; an acknowledged retire frees nothing
// later than before. The count is bounded (kMaxQuarantinedRanges): past it
// a new range merges with the nearest quarantined range of its segment,
// which withholds the gap between them too (more space out of use for a
// while, never less safety). A put that finds no space because of it
// evicts, then fails with NO_AVAILABLE_HANDLE, as for any full pool.
#include <algorithm>

#include "master/master_state.h"
#include "master/master_state_internal.h"

namespace mc::master {

namespace {
// Quarantined ranges kept at most (each a few words); see above.
constexpr size_t kMaxQuarantinedRanges = 4096;
}  // namespace

Status MasterState::QuarantineRange(std::string_view segment, uint64_t offset,
                                    uint64_t size_bytes, uint64_t until_us) {
  auto id = segment_ids_.find(segment);
  if (id == segment_ids_.end() || !segments_[id->second]) {
    return Error(ErrorCode::SEGMENT_NOT_FOUND, "no segment " + std::string(segment));
  }
  const uint32_t seg = id->second;
  ++quarantine_counts_.added;
  if (quarantine_.size() >= kMaxQuarantinedRanges) {
    // Merge with the nearest range of the same segment: the hull of both.
    QuarantineEntry* near = nullptr;
    uint64_t best = UINT64_MAX;
    for (QuarantineEntry& q : quarantine_) {
      if (q.segment != seg || q.size_bytes == 0) continue;
      const uint64_t gap = q.offset > offset ? q.offset - offset : offset - q.offset;
      if (gap < best) best = gap, near = &q;
    }
    if (near != nullptr && size_bytes != 0) {
      const uint64_t end = std::max(near->offset + near->size_bytes, offset + size_bytes);
      near->offset = std::min(near->offset, offset);
      near->size_bytes = end - near->offset;
      near->until_us = std::max(near->until_us, until_us);
      segments_[seg]->allocator.Quarantine(near->offset, near->size_bytes);
      ++quarantine_counts_.merged;
      return Status::Ok();
    }
  }
  quarantine_.push_back({seg, offset, size_bytes, until_us});
  segments_[seg]->allocator.Quarantine(offset, size_bytes);
  return Status::Ok();
}

void MasterState::LiftQuarantine(size_t index) {
  const QuarantineEntry q = quarantine_[index];
  quarantine_[index] = quarantine_.back();
  quarantine_.pop_back();
  SegmentAllocator& a = segments_[q.segment]->allocator;
  a.Unquarantine(q.offset, q.size_bytes);
  // What another range still quarantines stays withheld.
  for (const QuarantineEntry& o : quarantine_) {
    if (o.segment == q.segment) a.Quarantine(o.offset, o.size_bytes);
  }
}

void MasterState::ReleaseQuarantine(std::string_view segment, uint64_t offset,
                                    uint64_t size_bytes) {
  auto id = segment_ids_.find(segment);
  if (id == segment_ids_.end()) return;
  for (size_t i = 0; i < quarantine_.size(); ++i) {
    const QuarantineEntry& q = quarantine_[i];
    if (q.segment == id->second && q.offset == offset && q.size_bytes == size_bytes) {
      LiftQuarantine(i);  // a merged range waits for its time
      ++quarantine_counts_.released;
      return;
    }
  }
}

bool MasterState::InQuarantine(std::string_view segment, uint64_t offset,
                               uint64_t size_bytes) const {
  if (quarantine_.empty()) return false;
  auto id = segment_ids_.find(segment);
  if (id == segment_ids_.end() || !segments_[id->second]) return false;
  return segments_[id->second]->allocator.Quarantined(offset, size_bytes);
}

void MasterState::ExpireQuarantine(uint64_t now_us) {
  for (size_t i = 0; i < quarantine_.size();) {
    if (quarantine_[i].until_us > now_us) {
      ++i;
      continue;
    }
    LiftQuarantine(i);
    ++quarantine_counts_.expired;
  }
}

void MasterState::DropQuarantineOn(const std::vector<bool>& dropping) {
  std::erase_if(quarantine_, [&](const QuarantineEntry& q) { return dropping[q.segment]; });
}

MasterState::QuarantineStats MasterState::quarantine_stats() const {
  QuarantineStats s = quarantine_counts_;
  s.ranges = quarantine_.size();
  for (const auto& seg : segments_) {
    if (seg) s.bytes += seg->allocator.withheld_bytes();
  }
  return s;
}

}  // namespace mc::master

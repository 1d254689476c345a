// MasterState: placement, eviction, segment loss and the periodic Tick.
#include <algorithm>
#include <cassert>
#include <functional>

#include "common/debug_check.h"
#include "eviction/watermark.h"
#include "master/master_state.h"
#include "master/master_state_internal.h"

namespace mc::master {

// Mounted segments whose owner is alive, emptiest (lowest used fraction) first.
std::vector<uint32_t> MasterState::CandidateSegments(uint64_t now_us) const {
  std::vector<uint32_t> ids;
  for (const auto& [name, id] : segment_ids_)
    if (OwnerAlive(*segments_[id], now_us)) ids.push_back(id);
  auto fuller = [&](uint32_t a, uint32_t b) {
    const SegmentAllocator& x = segments_[a]->allocator;
    const SegmentAllocator& y = segments_[b]->allocator;
    const unsigned __int128 ux = x.used_bytes(), uy = y.used_bytes();
    const unsigned __int128 lhs = ux * y.capacity_bytes(), rhs = uy * x.capacity_bytes();
    return lhs != rhs ? lhs < rhs : a < b;
  };
  std::sort(ids.begin(), ids.end(), fuller);
  return ids;
}

// One attempt, all or nothing. Candidates are dealt round-robin to the
// replicas (replica r gets the r-th, (r+R)-th, ... emptiest), which keeps
// replicas on disjoint segment sets; a replica's stripes go round-robin over
// its own set, moving on to the next segment of the set when one is full.
void MasterState::Prefer(const msg::PutPlacement& placement, uint32_t replicas,
                         std::vector<uint32_t>* cands) const {
  // Same host first (stable: emptiest first among each kind).
  if (!placement.preferred_host.empty()) {
    std::stable_partition(cands->begin(), cands->end(), [&](uint32_t id) {
      return segments_[id]->desc.hostname == placement.preferred_host;
    });
  }
  // Replica r is dealt cands[r], cands[r + R], ...: its preferred segment
  // goes to index r. A name not mounted (or not alive) is skipped.
  const size_t n = std::min<size_t>(placement.preferred_segments.size(), replicas);
  for (size_t r = 0; r < n && r < cands->size(); ++r) {
    auto named = segment_ids_.find(placement.preferred_segments[r]);
    if (named == segment_ids_.end()) continue;
    auto at = std::find(cands->begin() + r, cands->end(), named->second);
    if (at == cands->end()) continue;
    const uint32_t id = *at;
    cands->erase(at);
    cands->insert(cands->begin() + r, id);
  }
}

bool MasterState::TryPlace(uint64_t size_bytes, uint32_t replicas, uint64_t now_us,
                           const msg::PutPlacement& placement,
                           std::vector<uint64_t>* packed) {
  std::vector<uint32_t> cands = CandidateSegments(now_us);
  if (cands.size() < replicas) return false;
  Prefer(placement, replicas, &cands);
  const uint32_t stripes = Stripes(size_bytes);
  packed->clear();
  packed->reserve(uint64_t{stripes} * replicas);
  auto piece = [&](uint32_t s) {
    return s + 1 < stripes ? options_.stripe_size_bytes
                           : size_bytes - uint64_t{s} * options_.stripe_size_bytes;
  };
  bool ok = true;
  for (uint32_t r = 0; r < replicas && ok; ++r) {
    const size_t group = (cands.size() - r + replicas - 1) / replicas;
    for (uint32_t s = 0; s < stripes && ok; ++s) {
      ok = false;
      for (size_t k = 0; k < group && !ok; ++k) {
        const uint32_t id = cands[r + ((s + k) % group) * replicas];
        if (auto off = segments_[id]->allocator.Allocate(piece(s))) {
          packed->push_back(PackBuffer(id, *off));
          allocated_bytes_ += SegmentAllocator::AlignUp(piece(s));
          ok = true;
        }
      }
    }
  }
  if (ok) return true;
  for (size_t i = 0; i < packed->size(); ++i) {  // roll back
    const uint64_t size = piece(static_cast<uint32_t>(i % stripes));
    segments_[BufferSegment((*packed)[i])]->allocator.Free(BufferOffset((*packed)[i]), size);
    allocated_bytes_ -= SegmentAllocator::AlignUp(size);
  }
  packed->clear();
  return false;
}

Result<std::vector<uint64_t>> MasterState::PlaceOrEvict(std::string_view key,
                                                        uint64_t size_bytes, uint32_t replicas,
                                                        uint64_t now_us,
                                                        const msg::PutPlacement& placement) {
  std::vector<uint64_t> packed;
  if (!retired_.empty()) FreeRetired(now_us);
  if (!quarantine_.empty()) ExpireQuarantine(now_us);
  if (TryPlace(size_bytes, replicas, now_us, placement, &packed)) return packed;
  // Refuse without evicting when even an empty pool could not hold it.
  const std::vector<uint32_t> cands = CandidateSegments(now_us);
  uint64_t usable = 0, largest = 0;
  for (uint32_t id : cands) {
    usable += segments_[id]->allocator.capacity_bytes();
    largest = std::max(largest, segments_[id]->allocator.capacity_bytes());
  }
  const uint64_t stripe = std::min(size_bytes, options_.stripe_size_bytes);
  const uint64_t need = SegmentAllocator::AlignUp(stripe) * Stripes(size_bytes) * replicas;
  if (cands.size() < replicas || usable < need || largest < stripe)
    return Error(ErrorCode::NO_AVAILABLE_HANDLE,
                 "put of '" + std::string(key) + "' (" + std::to_string(size_bytes) + " bytes x " +
                     std::to_string(replicas) + ") can never fit in the " +
                     std::to_string(cands.size()) + " live segments");
  // Evict one victim at a time, unpinned ones first; retry the placement only
  // when the pool has room in total and the victim left a hole that can hold
  // the smallest buffer (otherwise nothing that decides success changed).
  // Each step removes an object, so this ends; it fails only when nothing
  // evictable is left.
  const uint64_t smallest = SegmentAllocator::AlignUp(
      size_bytes - uint64_t{Stripes(size_bytes) - 1} * options_.stripe_size_bytes);
  uint64_t evicted_keys = 0;
  bool allow_pinned = false;
  bool placed = false;
  while (!placed) {
    uint64_t freed = 0, hole = 0;
    if (!EvictOne(now_us, allow_pinned, &freed, &hole)) {
      if (allow_pinned) break;
      allow_pinned = true;
      continue;
    }
    ++evicted_keys;
    if (capacity_bytes_ - allocated_bytes_ >= need && hole >= smallest)
      placed = TryPlace(size_bytes, replicas, now_us, placement, &packed);
  }
  if (evicted_keys > 0) {
    ++counters_.successful_evictions;
    puts_evicted_since_tick_ = true;
  }
  if (!placed && evicted_keys > 0) placed = TryPlace(size_bytes, replicas, now_us, placement, &packed);
  if (placed) return packed;
  return Error(ErrorCode::NO_AVAILABLE_HANDLE,
               "no space for '" + std::string(key) + "' (" + std::to_string(size_bytes) +
                   " bytes x " + std::to_string(replicas) +
                   "): nothing evictable is left (objects are leased, in flight or on " +
                   "dead segments)");
}

bool MasterState::EvictOne(uint64_t now_us, bool allow_pinned, uint64_t* freed_bytes,
                           uint64_t* largest_hole) {
  while (true) {
    auto victim = policy_->NextVictim([&](ObjectId id) {
      auto it = FindById(id);
      if (it == objects_.end()) return true;  // stale: let the policy drop it
      const ObjectRecord& rec = it->record;
      // An object being upserted is in flight too: its writer's PutEnd
      // would find nothing to replace.
      return rec.complete() && !Leased(rec, now_us) &&
             (pending_upserts_.empty() || !pending_upserts_.contains(rec.slot)) &&
             (allow_pinned ? rec.pin_expiry_us() != ObjectRecord::kHardPin : !Pinned(rec, now_us));
    });
    if (!victim) return false;
    auto it = FindById(*victim);
    if (it == objects_.end()) continue;
    const uint64_t before = allocated_bytes_;
    FreeBuffers(it->record, largest_hole);
    const uint64_t bytes = before - allocated_bytes_;
    it->record.SetBuffers(nullptr, 0);
    *freed_bytes += bytes;
    ++counters_.evicted_keys;
    counters_.evicted_bytes += bytes;
    EraseObject(it, RemoveReason::kEvicted, false);
    return true;
  }
}

uint64_t MasterState::EvictBytes(uint64_t target_bytes, uint64_t now_us, uint64_t* keys) {
  uint64_t freed = 0, hole = 0;
  for (bool allow_pinned : {false, true}) {
    while (freed < target_bytes && EvictOne(now_us, allow_pinned, &freed, &hole)) ++*keys;
  }
  if (*keys > 0) ++counters_.successful_evictions;
  return freed;
}

// Drops every replica with a buffer on one of `ids`, removes objects left
// without replicas, then forgets the segments.
void MasterState::DropSegments(const std::vector<uint32_t>& ids) {
  if (ids.empty()) return;
  std::vector<bool> dropping(segments_.size(), false);
  for (uint32_t id : ids) dropping[id] = true;
  DropPendingOn(dropping);
  for (auto it = objects_.begin(); it != objects_.end();) {
    auto next = std::next(it);
    DropReplicasOn(it, dropping);
    it = next;
  }
  for (uint32_t id : ids) {
    Segment& seg = *segments_[id];
    allocated_bytes_ -= seg.allocator.used_bytes();
    capacity_bytes_ -= seg.allocator.capacity_bytes();
    const std::string name = seg.desc.name;
    if (auto c = clients_.find(seg.owner); c != clients_.end())
      std::erase(c->second.segments, id);
    segment_ids_.erase(name);
    segments_[id].reset();
    free_segment_ids_.push_back(id);
    if (listener_ != nullptr) listener_->OnSegmentUnmounted(name);
  }
  ++view_version_;
  MC_DEBUG_CHECK_OK(CheckInvariants());
}

void MasterState::DropReplicasOn(ObjectIt it, const std::vector<bool>& dropping,
                                 bool segments_stay) {
  ObjectRecord& rec = it->record;
  const uint64_t* b = rec.buffers();
  bool touched = false;
  for (uint32_t i = 0; i < rec.buffer_count && !touched; ++i)
    touched = dropping[BufferSegment(b[i])];
  if (!touched) return;
  const uint32_t stripes = Stripes(rec.size_bytes);
  std::vector<uint64_t> kept;
  for (uint32_t r = 0; r < rec.replicas; ++r) {
    bool lost = false;
    for (uint32_t s = 0; s < stripes; ++s) lost |= dropping[BufferSegment(b[r * stripes + s])];
    for (uint32_t s = 0; s < stripes; ++s) {
      const uint32_t i = r * stripes + s;
      if (!lost) {
        kept.push_back(b[i]);
      } else if (segments_stay || !dropping[BufferSegment(b[i])]) {  // a stripe that stays
        NoteStale(BufferSegment(b[i]), BufferOffset(b[i]), BufferSize(rec, i));
        segments_[BufferSegment(b[i])]->allocator.Free(BufferOffset(b[i]), BufferSize(rec, i));
        allocated_bytes_ -= SegmentAllocator::AlignUp(BufferSize(rec, i));
      }
    }
  }
  // Unless the segments stay, the lost buffers' bytes leave with their
  // segments' allocators.
  rec.SetBuffers(kept.data(), static_cast<uint32_t>(kept.size()));
  rec.replicas = static_cast<uint8_t>(kept.size() / stripes);
  if (rec.replicas == 0) {
    EraseObject(it, segments_stay ? RemoveReason::kRemoved : RemoveReason::kReplicasLost, true);
  } else if (rec.complete() && listener_ != nullptr) {
    rec.listener_tag = listener_->OnObjectCommitted(Dump(it));
  }
}

uint64_t MasterState::ExpireClients(uint64_t now_us, uint64_t* segments) {
  std::vector<uint32_t> ids;
  uint64_t expired = 0;
  for (auto it = clients_.begin(); it != clients_.end();) {
    if (it->second.last_ping_us + options_.client_ttl_us < now_us) {
      ids.insert(ids.end(), it->second.segments.begin(), it->second.segments.end());
      it = clients_.erase(it);
      ++expired;
    } else {
      ++it;
    }
  }
  *segments = ids.size();
  DropSegments(ids);
  return expired;
}

uint64_t MasterState::DiscardZombiePuts(uint64_t now_us) {
  uint64_t discarded = 0;
  while (!put_deadlines_.empty() && put_deadlines_.front().at_us <= now_us) {
    std::pop_heap(put_deadlines_.begin(), put_deadlines_.end(), std::greater<>());
    const Timer t = put_deadlines_.back();
    put_deadlines_.pop_back();
    auto it = FindById(t.id);
    if (it == objects_.end() || it->record.complete()) continue;  // ended or revoked
    EraseObject(it, RemoveReason::kRemoved, false);
    ++discarded;
  }
  // Every put leaves an entry here until its deadline, ended or not: under a
  // steady stream of puts that is put_timeout_us worth of them (16 bytes
  // each, millions in a bulk fill). Once most are stale, keep only the puts
  // still in flight, and give the memory back. Amortized O(1) per put.
  constexpr size_t kMinCompactedTimers = 4096;
  if (put_deadlines_.size() > kMinCompactedTimers &&
      put_deadlines_.size() > 2 * put_owners_.size()) {
    std::erase_if(put_deadlines_, [&](const Timer& t) {
      auto it = FindById(t.id);
      return it == objects_.end() || it->record.complete();
    });
    std::make_heap(put_deadlines_.begin(), put_deadlines_.end(), std::greater<>());
    put_deadlines_.shrink_to_fit();
  }
  return discarded;
}

uint64_t MasterState::ExpirePins(uint64_t now_us) {
  uint64_t expired = 0;
  while (!pin_expiries_.empty() && pin_expiries_.front().at_us <= now_us) {
    std::pop_heap(pin_expiries_.begin(), pin_expiries_.end(), std::greater<>());
    const Timer t = pin_expiries_.back();
    pin_expiries_.pop_back();
    auto it = FindById(t.id);
    if (it == objects_.end() || !it->record.has(ObjectRecord::kPinCounted)) continue;
    ObjectRecord& rec = it->record;
    if (rec.pin_expiry_us() > now_us) {  // a read extended it: check again later
      pin_expiries_.push_back({rec.pin_expiry_us(), t.id});
      std::push_heap(pin_expiries_.begin(), pin_expiries_.end(), std::greater<>());
      continue;
    }
    rec.flags &= ~ObjectRecord::kPinCounted;
    --soft_pinned_count_;
    ++expired;
  }
  return expired;
}

TickReport MasterState::Tick(uint64_t now_us) {
  TickReport report;
  report.expired_clients = ExpireClients(now_us, &report.unmounted_segments);
  report.discarded_puts = DiscardZombiePuts(now_us);
  FreeRetired(now_us);
  if (!quarantine_.empty()) ExpireQuarantine(now_us);
  if (!superseded_.empty()) ExpireSuperseded(now_us);
  ExpireTasks(now_us);
  report.expired_pins = ExpirePins(now_us);
  SweepReads(now_us);
  const uint64_t target = BackgroundEvictionBytes({.capacity_bytes = capacity_bytes_,
                                                    .allocated_bytes = allocated_bytes_,
                                                    .high_watermark_ratio =
                                                        options_.eviction_high_watermark_ratio,
                                                    .eviction_ratio = options_.eviction_ratio,
                                                    .puts_evicted = puts_evicted_since_tick_});
  puts_evicted_since_tick_ = false;
  if (target > 0 && options_.background_eviction) report.evicted_bytes = EvictBytes(target, now_us, &report.evicted_keys);
  counters_.expired_clients += report.expired_clients;
  counters_.discarded_puts += report.discarded_puts;
  counters_.expired_pins += report.expired_pins;
  return report;
}

}  // namespace mc::master

// MasterState::CheckInvariants: the cross-structure rules of the state
// machine, walked in full. Tests call it after every step of the model test
// and at the end of every harness; the sanitizer build (MC_DEBUG_CHECKS)
// also runs it where the state changed in bulk (a reload, dropped segments).
#include <algorithm>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "master/master_state.h"
#include "master/master_state_internal.h"

namespace mc::master {

namespace {

Status Broken(std::string what) {
  return Error(ErrorCode::INTERNAL_ERROR, "master state: " + std::move(what));
}

}  // namespace

Status MasterState::CheckInvariants() const {
  if (bulk_loading_) return Broken("checked during a bulk load");
  MC_RETURN_IF_ERROR(objects_.CheckInvariants());
  MC_RETURN_IF_ERROR(CheckSlots());
  MC_RETURN_IF_ERROR(CheckSegments());
  return CheckBuffers();
}

// Each object's slot points back at its node; the other slots are free,
// each listed once; only in-flight puts have an owner.
Status MasterState::CheckSlots() const {
  if (slot_nodes_.size() != slot_generations_.size()) return Broken("slot arrays differ in size");
  size_t live = 0;
  for (uint32_t handle : slot_nodes_) live += handle != 0;
  if (live != objects_.size()) {
    return Broken(std::to_string(live) + " live slots for " + std::to_string(objects_.size()) +
                  " objects");
  }
  for (auto it = objects_.begin(); it != objects_.end(); ++it) {
    const uint32_t slot = it->record.slot;
    if (slot >= slot_nodes_.size() || NodeAt(slot) != it.node()) {
      return Broken("object '" + std::string(it->key()) + "' is not in its slot");
    }
  }
  std::unordered_set<uint32_t> free(free_slots_.begin(), free_slots_.end());
  if (free.size() != free_slots_.size() || free.size() + live != slot_nodes_.size()) {
    return Broken("free slot list does not hold each unused slot once");
  }
  for (uint32_t slot : free) {
    if (slot >= slot_nodes_.size() || slot_nodes_[slot] != 0) {
      return Broken("slot " + std::to_string(slot) + " is both free and used");
    }
  }
  for (const auto& [slot, owner] : put_owners_) {
    if (slot >= slot_nodes_.size() || slot_nodes_[slot] == 0 || NodeAt(slot)->record.complete()) {
      return Broken("a put owner for slot " + std::to_string(slot) + ", not a put in flight");
    }
  }
  for (const auto& [hash, slot] : put_slots_) {
    if (!put_owners_.contains(slot) ||
        std::hash<std::string_view>()(NodeAt(slot)->key()) != hash) {
      return Broken("the put of slot " + std::to_string(slot) + " is not under its key's hash");
    }
  }
  return Status::Ok();
}

// Names, ids and owners agree; each allocator holds its own invariants;
// the capacity counter is their sum.
Status MasterState::CheckSegments() const {
  size_t live = 0;
  uint64_t capacity = 0;
  for (const auto& seg : segments_) {
    if (seg == nullptr) continue;
    ++live;
    capacity += seg->allocator.capacity_bytes();
    MC_RETURN_IF_ERROR(seg->allocator.CheckInvariants());
  }
  if (live != segment_ids_.size() || live + free_segment_ids_.size() != segments_.size()) {
    return Broken("segment ids, names and free ids disagree");
  }
  for (const auto& [name, id] : segment_ids_) {
    if (id >= segments_.size() || segments_[id] == nullptr || segments_[id]->desc.name != name) {
      return Broken("segment '" + name + "' is not under its id");
    }
  }
  for (const auto& [client, c] : clients_) {
    for (uint32_t id : c.segments) {
      if (id >= segments_.size() || segments_[id] == nullptr || segments_[id]->owner != client) {
        return Broken("client " + ClientName(client) + " lists a segment it does not own");
      }
    }
  }
  if (capacity != capacity_bytes_) return Broken("capacity counter is not the segments' sum");
  return Status::Ok();
}

// Every buffer lies in used space of a live segment, no two overlap, and
// per segment they add up to exactly the allocator's used bytes. Buffers
// are held by objects, by upserts' versions not ended yet, by copy/move
// tasks' targets being written, and by retired buffers kept for readers.
Status MasterState::CheckBuffers() const {
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> used(segments_.size());
  auto add = [&](const ObjectRecord& rec, const std::string& what) -> Status {
    for (uint32_t i = 0; i < rec.buffer_count; ++i) {
      const uint64_t b = rec.buffers()[i];
      const uint32_t id = BufferSegment(b);
      if (id >= segments_.size() || segments_[id] == nullptr) {
        return Broken(what + " has a buffer on a segment that is gone");
      }
      if (!segments_[id]->allocator.IsUsed(BufferOffset(b), BufferSize(rec, i))) {
        return Broken(what + " has a buffer in free space of '" + segments_[id]->desc.name + "'");
      }
      used[id].emplace_back(BufferOffset(b), SegmentAllocator::AlignUp(BufferSize(rec, i)));
    }
    return Status::Ok();
  };
  for (auto it = objects_.begin(); it != objects_.end(); ++it) {
    const ObjectRecord& rec = it->record;
    const std::string what = "object '" + std::string(it->key()) + "'";
    if (rec.buffer_count != uint32_t{rec.replicas} * Stripes(rec.size_bytes)) {
      return Broken(what + " has " + std::to_string(rec.buffer_count) + " buffers for " +
                    std::to_string(rec.replicas) + " replicas");
    }
    MC_RETURN_IF_ERROR(add(rec, what));
  }
  for (const auto& [slot, pending] : pending_upserts_) {
    MC_RETURN_IF_ERROR(add(pending->rec, "the upsert in slot " + std::to_string(slot)));
  }
  for (const auto& [id, task] : tasks_) {
    MC_RETURN_IF_ERROR(add(task->placed, "a copy/move task"));
  }
  uint64_t retired = 0;
  auto add_retired = [&](const Retired& r) -> Status {
    retired += SegmentAllocator::AlignUp(r.size_bytes);
    if (r.segment >= segments_.size() || segments_[r.segment] == nullptr) return Status::Ok();
    if (!segments_[r.segment]->allocator.IsUsed(r.offset, r.size_bytes)) {
      return Broken("a retired buffer in free space of '" + segments_[r.segment]->desc.name + "'");
    }
    used[r.segment].emplace_back(r.offset, SegmentAllocator::AlignUp(r.size_bytes));
    return Status::Ok();
  };
  for (const Retired& r : retired_) {
    if (r.held == 0) MC_RETURN_IF_ERROR(add_retired(r));
  }
  for (const auto& [id, held] : held_) {
    for (const Retired& r : held->buffers) MC_RETURN_IF_ERROR(add_retired(r));
  }
  if (retired != retired_bytes_) return Broken("retired counter is not the retired buffers' sum");
  uint64_t allocated = 0;
  for (uint32_t id = 0; id < used.size(); ++id) {
    if (segments_[id] == nullptr) continue;
    auto& ranges = used[id];
    std::sort(ranges.begin(), ranges.end());
    uint64_t sum = 0;
    for (size_t i = 0; i < ranges.size(); ++i) {
      if (i > 0 && ranges[i - 1].first + ranges[i - 1].second > ranges[i].first) {
        return Broken("two buffers overlap at " + std::to_string(ranges[i].first) + " of '" +
                      segments_[id]->desc.name + "'");
      }
      sum += ranges[i].second;
    }
    if (sum != segments_[id]->allocator.used_bytes()) {
      return Broken("buffers on '" + segments_[id]->desc.name + "' hold " + std::to_string(sum) +
                    " bytes, its allocator " +
                    std::to_string(segments_[id]->allocator.used_bytes()) + " (a leak)");
    }
    allocated += sum;
  }
  if (allocated != allocated_bytes_) return Broken("allocated counter is not the buffers' sum");
  return Status::Ok();
}

}  // namespace mc::master

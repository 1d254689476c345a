// MasterState: the space of removed and replaced versions comes back once
// their readers are done, not only at their lease's deadline.
//
// A forced Remove (or RemoveAll, RemoveByRegex) of a leased object, and an
// upsert's end over a leased version, keep the old buffers allocated while
// a read grant may still name them. Before, that was until the lease's
// deadline even when every reader had released its read at once (the
// release names the key, whose current version is another one, or none).
// Now such a version is "held": it remembers its key and how many tracked
// reads (GetReplicaList, TaskStart) were out when it went, a release by one
// of their clients that matches no read of the key's current version counts
// against it, and the last one frees its buffers. The deadline still frees
// them if the releases never come (a lost notification, a crashed reader).
//
// Why no reader gets another object's bytes: a release says "this client is
// done with its read of this key" and names no version, so it may count only
// where it is unambiguous. A client that reads the key's current version
// while it still holds a counted read of a held version could mean either
// by its next release: the held version is then marked ambiguous (it waits
// for its deadline) and the current version's lease ends by time alone, as
// EndPendingUpsert already does for the version that replaced a read one.
// Two held versions with a counted read of the same client: neither counts.
// A client whose lease the master expires (it stopped pinging) does not free
// its reads: its grants stay valid at the stores until they expire, and a
// client cut off from the master may still reach a store.
#include <algorithm>

#include "master/master_state.h"
#include "master/master_state_internal.h"

namespace mc::master {

bool MasterState::HoldForReaders(const ObjectRecord& rec, std::string_view key,
                                 uint64_t now_us) {
  if (!Leased(rec, now_us) || rec.readers() == ObjectRecord::kReadersUnknown) return false;
  if (rec.readers() == 0) {  // leased by ExistKey alone, which names no bytes
    RetireBuffers(rec, now_us, now_us);
    return true;
  }
  const ObjectId id = IdOf(rec);
  auto held = std::make_unique<Held>();
  held->key = std::string(key);
  held->readers = rec.readers();
  const uint64_t* b = rec.buffers();
  for (uint32_t i = 0; i < rec.buffer_count; ++i) {
    const uint32_t seg = BufferSegment(b[i]);
    const uint64_t size = BufferSize(rec, i);
    NoteStale(seg, BufferOffset(b[i]), size);
    held->buffers.push_back({rec.deadline_us, seg, BufferOffset(b[i]), size});
    retired_bytes_ += SegmentAllocator::AlignUp(size);
  }
  retired_.push_back({rec.deadline_us, 0, 0, 0, id});
  std::push_heap(retired_.begin(), retired_.end(), std::greater<>());
  held_keys_[held->key].push_back(id);
  held_.emplace(id, std::move(held));
  return true;
}

void MasterState::FreeHeld(ObjectId id) {
  auto h = held_.find(id);
  if (h == held_.end()) return;  // freed by its releases before its deadline
  for (const Retired& r : h->second->buffers) {
    segments_[r.segment]->allocator.Free(r.offset, r.size_bytes);
    allocated_bytes_ -= SegmentAllocator::AlignUp(r.size_bytes);
    retired_bytes_ -= SegmentAllocator::AlignUp(r.size_bytes);
  }
  auto k = held_keys_.find(h->second->key);
  std::erase(k->second, id);
  if (k->second.empty()) held_keys_.erase(k);
  held_.erase(h);
}

void MasterState::ReleaseHeld(const msg::KeyRequest& req, uint64_t now_us) {
  auto k = held_keys_.find(req.key);
  if (k == held_keys_.end()) return;
  auto match = reads_.end();
  for (ObjectId id : k->second) {
    auto g = reads_.find(ReadKey{req.client, id});
    if (g == reads_.end() || g->second.deadline_us <= now_us) continue;  // not counted
    if (match != reads_.end()) return;  // two versions it could mean: both end by time
    match = g;
  }
  if (match == reads_.end()) return;
  const ObjectId id = match->first.object;
  if (--match->second.count == 0) reads_.erase(match);
  Held& held = *held_.at(id);
  ++counters_.released_reads;
  if (--held.readers == 0 && !held.ambiguous) FreeHeld(id);
}

void MasterState::CheckHeldReads(const msg::ClientId& reader, ObjectRecord& rec,
                                 uint64_t now_us) {
  auto k = held_keys_.find(NodeAt(rec.slot)->key());
  if (k == held_keys_.end()) return;
  for (ObjectId id : k->second) {
    auto g = reads_.find(ReadKey{reader, id});
    if (g == reads_.end() || g->second.deadline_us <= now_us) continue;
    // Its next release may be of either version: neither ends by it.
    held_.at(id)->ambiguous = true;
    rec.set_readers(ObjectRecord::kReadersUnknown);
  }
}

void MasterState::DropHeldOn(const std::vector<bool>& dropping) {
  for (auto& [id, held] : held_) {
    std::erase_if(held->buffers, [&](const Retired& r) {
      if (!dropping[r.segment]) return false;
      retired_bytes_ -= SegmentAllocator::AlignUp(r.size_bytes);
      return true;
    });
  }
}

}  // namespace mc::master

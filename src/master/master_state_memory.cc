// MasterState::memory_use: heap bytes of the structures that grow with the
// objects, estimated from their capacities (node-based containers at one
// allocation a node of their value plus two pointers).
#include <cstddef>

#include "master/master_state.h"
#include "master/master_state_internal.h"

namespace mc::master {

namespace {

// An unordered_map of `size` values of `value_bytes` in `buckets` buckets:
// a node (next pointer, cached hash, value) each, a pointer a bucket.
size_t HashMapBytes(size_t size, size_t buckets, size_t value_bytes) {
  return size * (value_bytes + 2 * sizeof(void*)) + buckets * sizeof(void*);
}

}  // namespace

MasterState::MemoryUse MasterState::memory_use() const {
  MemoryUse m;
  m.index = objects_.memory_bytes();
  m.index_nodes = objects_.node_bytes();
  m.slots = slot_nodes_.capacity() * sizeof(uint32_t) +
            slot_generations_.capacity() * sizeof(uint32_t) +
            free_slots_.capacity() * sizeof(uint32_t);
  m.policy = policy_->memory_bytes();
  m.in_flight = (put_deadlines_.capacity() + pin_expiries_.capacity()) * sizeof(Timer) +
                HashMapBytes(put_owners_.size(), put_owners_.bucket_count(),
                             sizeof(uint32_t) + sizeof(msg::ClientId)) +
                HashMapBytes(put_slots_.size(), put_slots_.bucket_count(),
                             sizeof(uint64_t) + sizeof(uint32_t)) +
                HashMapBytes(reads_.size(), reads_.bucket_count(),
                             sizeof(ReadKey) + sizeof(ReadGrant)) +
                HashMapBytes(pending_upserts_.size(), pending_upserts_.bucket_count(),
                             sizeof(uint32_t) + sizeof(void*) + sizeof(Pending)) +
                retired_.capacity() * sizeof(Retired) +
                held_.size() * (sizeof(Held) + 64);  // + its buffers and key
  return m;
}

}  // namespace mc::master

// DummyForgets: the table through which a standalone client (`mooncake
// client`) tells its dummy clients at once that keys changed, so a dummy's
// own direct reads (client/dummy_client.cc) never outlive a put, upsert or
// removal made through the same standalone client by any of its dummies.
//
// A memfd of kForgetSlots counters plus one "everything" counter. The
// standalone client maps it read/write and bumps a key's slot after every
// call that changed the key (Bump), or the everything counter after one that
// may have changed any key (BumpAll: remove_all, remove_by_regex, tasks). A
// dummy maps it read-only (DummyForgetTable op) and keeps, beside each
// location it learnt, the key's Mark() read before the standalone client
// looked that location up; the location is used only while Mark() is
// unchanged. Keys share slots (a collision costs a round trip, never a stale
// read). Changes made through other clients are bounded by the direct-read
// TTL, as for any client (client/direct_reads.h).
//
// The table also tells a dummy, without a syscall, that its standalone
// client is alive: a robust process-shared mutex in it is held by the
// server's thread for as long as it serves (HoldAlive); when that process
// dies the kernel marks the mutex's owner dead before anyone can reap it, so
// a dummy that saw the death of its client (waitpid, a failed call) never
// reads again through a location it learnt from it.
//
// Thread-safe: the counters are atomics; a mapping lives until Unmap.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/result.h"

namespace mc::client {

// Slots of the table (a power of two): 32 KiB shared per standalone client.
inline constexpr size_t kForgetSlots = 4096;

struct ForgetTable {
  std::atomic<uint64_t> all{0};
  pthread_mutex_t alive;  // robust, process-shared (HoldAlive)
  std::atomic<uint64_t> slots[kForgetSlots];
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "the table is shared memory");

// The key's mark: changes whenever its slot or the everything counter does.
uint64_t ForgetMark(const ForgetTable& t, std::string_view key);
// After a change of `key` (release: the change happened before).
void BumpForget(ForgetTable& t, std::string_view key);
void BumpForgetAll(ForgetTable& t);

// The serving thread holds `alive` from HoldAlive until ReleaseAlive (the
// same thread); OwnerAlive is true only in between, and never once the
// holder's process died.
Status HoldAlive(ForgetTable& t);
void ReleaseAlive(ForgetTable& t);
bool OwnerAlive(const ForgetTable& t);

// A fresh zeroed table, mapped read/write; its memfd in *fd (the caller
// closes it).
Result<ForgetTable*> CreateForgetTable(int* fd);
// The table of `fd`, mapped read-only (the caller keeps or closes fd).
Result<const ForgetTable*> MapForgetTable(int fd);
void UnmapForgetTable(const ForgetTable* t);

}  // namespace mc::client

// DummyJournal: the keys a dummy client is putting by itself right now
// (client/dummy_client.cc, direct puts), in shared memory its standalone
// client (`mooncake client`) maps too, so that a dummy killed mid-put
// leaves no put in progress behind: when its connection ends, the
// standalone client revokes at the master every put the journal still
// names, as `owner` (the dummy's own client id), and the space they took is
// freed at once instead of at the master's put timeout.
//
// A memfd of kJournalBytes: the owner (the client id the dummy puts as), a length (0: no put under way) and
// the keys, each a u32 length and its bytes. The dummy writes the keys, then
// publishes the length (release) before its PutStart, and clears it after
// its PutEnd/revoke; the standalone client reads it only after the dummy's
// process is gone (its socket closed), so there is never a writer then.
// A batch whose keys do not fit is not journalled (the dummy then puts
// through the standalone client, as before).
//
// Thread-safety: one writer (the dummy, under its put lock); Pending() is
// for after the writer is gone, and bounds-checks what it reads.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "msg/messages.h"

namespace mc::client {

// The journal's size: room for one batch of 1024 keys of ~1 KiB.
inline constexpr uint64_t kJournalBytes = 1ull << 20;

struct JournalHeader {
  msg::ClientId owner;
  std::atomic<uint64_t> used_bytes{0};  // bytes of keys after the header; 0: nothing under way
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "the journal is shared memory");

class DummyJournal {
 public:
  // A fresh journal (a memfd the caller passes on), owner unset.
  static Result<std::unique_ptr<DummyJournal>> Create();
  // The journal of `fd` (the standalone client's side); the caller keeps fd.
  static Result<std::unique_ptr<DummyJournal>> Map(int fd);
  ~DummyJournal();
  DummyJournal(const DummyJournal&) = delete;
  DummyJournal& operator=(const DummyJournal&) = delete;

  int fd() const { return fd_; }
  // The client id whose puts the journal names (before the first Begin).
  void set_owner(const msg::ClientId& owner) { header()->owner = owner; }
  // Names `keys` as under way; false (nothing written) when they do not fit.
  bool Begin(const std::vector<std::string>& keys);
  // Nothing under way.
  void End();
  // The owner and the keys under way (PROTOCOL_ERROR for a length or key
  // that runs past the journal).
  msg::ClientId owner() const;
  Result<std::vector<std::string>> Pending() const;

 private:
  DummyJournal(int fd, uint8_t* base) : fd_(fd), base_(base) {}
  JournalHeader* header() const { return reinterpret_cast<JournalHeader*>(base_); }
  uint8_t* keys_at(uint64_t at) const { return base_ + sizeof(JournalHeader) + at; }

  int fd_ = -1;  // Create's journal owns it; Map's has none
  uint8_t* base_ = nullptr;
  bool owns_fd_ = false;
};

}  // namespace mc::client

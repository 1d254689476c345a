// DummyDirect: a dummy client's own direct reads (issue 30 point 6, issue 33
// point 1). A get through the standalone client costs a hop between two
// processes (two context switches, four syscalls); a repeated get of a key
// on a same-host segment needs neither: the dummy maps the segment itself
// (transfer::ShmTransport) and reads the key with the sealed read its
// standalone client would have made, at the location that client cached
// (DummyGetIntoLearn answers it). The seal proves the bytes are still that
// version's (client/direct_reads.h); the shared forget table proves no call
// through the same standalone client changed the key since the location was
// looked up (client/dummy_forgets.h). Otherwise the get goes through the
// standalone client, as before.
//
// Hits are counted per key; the dummy sends them to its standalone client
// (DummyReportAccesses) in batches, which reports them to the master.
//
// Thread-safe (DirectReads' mutex; the table is atomics), except that Reset
// must not run concurrently with Read or Learn.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "client/direct_reads.h"
#include "client/dummy_forgets.h"
#include "msg/dummy_messages.h"
#include "transfer/shm_transport.h"

namespace mc::client {

class DummyDirect {
 public:
  // How often hits are sent at most (unless kMaxPendingAccessKeys keys wait).
  static constexpr uint64_t kReportIntervalUs = 1'000'000;

  DummyDirect();
  ~DummyDirect();
  DummyDirect(const DummyDirect&) = delete;
  DummyDirect& operator=(const DummyDirect&) = delete;

  // Starts over with `table` (owned from now on; null: no direct reads):
  // at attach, and again at every re-attach (a new standalone client, new
  // segments: nothing learnt before may be read).
  void Reset(const ForgetTable* table);
  bool enabled() const { return table_.load() != nullptr; }
  // False once the standalone client that serves the table stopped or died
  // (no syscall: dummy_forgets.h); true without a table.
  bool owner_alive() const {
    const ForgetTable* t = table_.load();
    return t == nullptr || OwnerAlive(*t);
  }

  // Reads the keys it knows into their buffer (one part holding the whole
  // object); served[i] and sizes[i] for each one read. Returns how many.
  size_t Read(const std::vector<std::string>& keys,
              const std::vector<std::vector<std::span<uint8_t>>>& parts,
              std::vector<bool>* served, std::vector<uint64_t>* sizes);
  // Remembers the locations a DummyGetIntoLearn answered for `keys`.
  void Learn(const std::vector<std::string>& keys, const std::vector<msg::DummyLocation>& where);
  void Forget(const std::string& key) { cache_.Forget(key); }
  void Clear() { cache_.Clear(); }

  // The hits to send now (empty when none are due).
  std::vector<msg::KeyAccess> DueAccesses(uint64_t now_us);
  // Gets served here since construction (the same-host path's count).
  uint64_t hits() const { return hits_.load(); }

 private:
  DirectReads cache_;
  std::unique_ptr<transfer::ShmTransport> shm_;
  std::atomic<const ForgetTable*> table_{nullptr};
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> last_report_us_{0};
};

}  // namespace mc::client

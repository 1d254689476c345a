// MemoryRegistry: the local memory a transfer engine lets its peers write
// and read (register_memory in the reference's TransferEngine). Peers name
// bytes by their virtual address in this process; a request is served only
// when [addr, addr + len) lies inside one registered region, so an
// unregistered or freed buffer can never be touched from the wire.
// Thread-safe: regions come and go while the data port serves requests.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "common/result.h"
#include "transfer/transport.h"

namespace mc::p2p {

// Upper bound of regions one engine registers (each is a map entry that
// every request looks up).
inline constexpr size_t kMaxRegions = 65536;

// One registered region as the same-host path (local_peer.h) sees it.
struct RegionInfo {
  uint64_t addr = 0;
  uint64_t len = 0;
  uint64_t id = 0;      // unique for the registry's life: a region freed and
                        // registered again at the same address gets a new one
  bool shareable = false;  // backed by a memfd a peer on this host may map
};

class MemoryRegistry {
 public:
  // INVALID_PARAMS for a null or empty region, one overlapping another, or
  // past kMaxRegions. `memfd` >= 0: the region is that file's first `len`
  // bytes, mapped shared (not owned: the caller closes it after Remove).
  Status Add(uint64_t addr, uint64_t len, int memfd = -1);
  // INVALID_PARAMS when no region starts at `addr`.
  Status Remove(uint64_t addr);
  // Whether [addr, addr + len) lies inside one region.
  bool Covers(uint64_t addr, uint64_t len) const;
  // The region holding all of [addr, addr + len), if one does.
  std::optional<RegionInfo> Find(uint64_t addr, uint64_t len) const;
  // A duplicate of the memfd of region `id` (the caller closes it), its
  // length in *len; -1 when the region is gone or not shareable.
  int DupFd(uint64_t id, uint64_t* len) const;
  size_t size() const;

 private:
  struct Entry {
    uint64_t len = 0;
    uint64_t id = 0;
    int fd = -1;
  };
  mutable std::mutex mu_;
  std::map<uint64_t, Entry> regions_;  // by start address
  uint64_t next_id_ = 1;
};

// The data port's AccessCheck: offsets are addresses, the grant is ignored
// (peers hold no master grants); INVALID_WRITE / INVALID_READ naming the
// range when it is not registered.
transfer::AccessCheck RegisteredOnly(std::shared_ptr<const MemoryRegistry> registry);

}  // namespace mc::p2p

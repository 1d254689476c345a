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

#include "common/result.h"
#include "transfer/transport.h"

namespace mc::p2p {

// Upper bound of regions one engine registers (each is a map entry that
// every request looks up).
inline constexpr size_t kMaxRegions = 65536;

class MemoryRegistry {
 public:
  // INVALID_PARAMS for a null or empty region, one overlapping another, or
  // past kMaxRegions.
  Status Add(uint64_t addr, uint64_t len);
  // INVALID_PARAMS when no region starts at `addr`.
  Status Remove(uint64_t addr);
  // Whether [addr, addr + len) lies inside one region.
  bool Covers(uint64_t addr, uint64_t len) const;
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::map<uint64_t, uint64_t> regions_;  // start address -> length
};

// The data port's AccessCheck: offsets are addresses, the grant is ignored
// (peers hold no master grants); INVALID_WRITE / INVALID_READ naming the
// range when it is not registered.
transfer::AccessCheck RegisteredOnly(std::shared_ptr<const MemoryRegistry> registry);

}  // namespace mc::p2p

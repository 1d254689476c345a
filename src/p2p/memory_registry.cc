#include "p2p/memory_registry.h"

#include <fcntl.h>

#include <sstream>

namespace mc::p2p {

Status MemoryRegistry::Add(uint64_t addr, uint64_t len, int memfd) {
  if (addr == 0 || len == 0 || len > UINT64_MAX - addr) {
    return Error(ErrorCode::INVALID_PARAMS, "cannot register an empty, null or wrapping region");
  }
  std::lock_guard lock(mu_);
  if (regions_.size() >= kMaxRegions) {
    return Error(ErrorCode::INVALID_PARAMS,
                 "already " + std::to_string(kMaxRegions) + " regions registered (kMaxRegions)");
  }
  auto next = regions_.lower_bound(addr);
  if (next != regions_.end() && next->first < addr + len) {
    return Error(ErrorCode::INVALID_PARAMS, "region overlaps one registered at " +
                                                std::to_string(next->first));
  }
  if (next != regions_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.len > addr) {
      return Error(ErrorCode::INVALID_PARAMS, "region overlaps one registered at " +
                                                  std::to_string(prev->first));
    }
  }
  regions_.emplace(addr, Entry{len, next_id_++, memfd});
  return Status::Ok();
}

Status MemoryRegistry::Remove(uint64_t addr) {
  std::lock_guard lock(mu_);
  if (regions_.erase(addr) == 0) {
    return Error(ErrorCode::INVALID_PARAMS, "no region registered at " + std::to_string(addr));
  }
  return Status::Ok();
}

bool MemoryRegistry::Covers(uint64_t addr, uint64_t len) const {
  return Find(addr, len).has_value();
}

std::optional<RegionInfo> MemoryRegistry::Find(uint64_t addr, uint64_t len) const {
  if (len > UINT64_MAX - addr) return std::nullopt;
  std::lock_guard lock(mu_);
  auto it = regions_.upper_bound(addr);
  if (it == regions_.begin()) return std::nullopt;
  --it;
  if (addr + len > it->first + it->second.len) return std::nullopt;
  return RegionInfo{it->first, it->second.len, it->second.id, it->second.fd >= 0};
}

int MemoryRegistry::DupFd(uint64_t id, uint64_t* len) const {
  std::lock_guard lock(mu_);
  for (const auto& [addr, e] : regions_) {
    if (e.id != id) continue;
    if (e.fd < 0) return -1;
    *len = e.len;
    return ::fcntl(e.fd, F_DUPFD_CLOEXEC, 0);
  }
  return -1;
}

size_t MemoryRegistry::size() const {
  std::lock_guard lock(mu_);
  return regions_.size();
}

transfer::AccessCheck RegisteredOnly(std::shared_ptr<const MemoryRegistry> registry) {
  return [registry](transfer::OpKind op, uint64_t offset, uint64_t len,
                    const transfer::Grant&) -> Status {
    if (registry->Covers(offset, len)) return Status::Ok();
    std::ostringstream msg;
    msg << "[0x" << std::hex << offset << ", +" << std::dec << len
        << ") is not inside registered memory";
    return Error(op == transfer::OpKind::kWrite ? ErrorCode::INVALID_WRITE
                                                : ErrorCode::INVALID_READ,
                 msg.str());
  };
}

}  // namespace mc::p2p

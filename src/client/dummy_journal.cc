#include "client/dummy_journal.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

namespace mc::client {

namespace {

constexpr uint64_t kKeyRoom = kJournalBytes - sizeof(JournalHeader);

Status Errno(const std::string& what) {
  return Error(ErrorCode::INTERNAL_ERROR, what + ": " + std::strerror(errno));
}

Result<uint8_t*> MapJournal(int fd) {
  void* at = ::mmap(nullptr, kJournalBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (at == MAP_FAILED) return Errno("mapping the put journal");
  return static_cast<uint8_t*>(at);
}

}  // namespace

Result<std::unique_ptr<DummyJournal>> DummyJournal::Create() {
  int fd = ::memfd_create("mooncake-dummy-journal", MFD_CLOEXEC);
  if (fd < 0) return Errno("memfd_create of the put journal");
  if (::ftruncate(fd, static_cast<off_t>(kJournalBytes)) != 0) {
    Status st = Errno("sizing the put journal");
    ::close(fd);
    return st;
  }
  auto base = MapJournal(fd);
  if (!base.ok()) {
    ::close(fd);
    return base.status();
  }
  new (*base) JournalHeader();  // a fresh memfd is zeroed; this starts the atomic's life
  std::unique_ptr<DummyJournal> j(new DummyJournal(fd, *base));
  j->owns_fd_ = true;
  return j;
}

Result<std::unique_ptr<DummyJournal>> DummyJournal::Map(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Errno("fstat of the put journal");
  if (static_cast<uint64_t>(st.st_size) != kJournalBytes) {
    return Error(ErrorCode::PROTOCOL_ERROR, "put journal of " + std::to_string(st.st_size) +
                                                " bytes, expected " + std::to_string(kJournalBytes));
  }
  MC_ASSIGN_OR_RETURN(uint8_t * base, MapJournal(fd));
  return std::unique_ptr<DummyJournal>(new DummyJournal(-1, base));
}

DummyJournal::~DummyJournal() {
  ::munmap(base_, kJournalBytes);
  if (owns_fd_) ::close(fd_);
}

bool DummyJournal::Begin(const std::vector<std::string>& keys) {
  uint64_t at = 0;
  for (const std::string& k : keys) {
    const uint32_t n = static_cast<uint32_t>(k.size());
    if (k.size() > kKeyRoom || sizeof(n) + n > kKeyRoom - at) return false;
    std::memcpy(keys_at(at), &n, sizeof(n));
    std::memcpy(keys_at(at + sizeof(n)), k.data(), n);
    at += sizeof(n) + n;
  }
  header()->used_bytes.store(at, std::memory_order_release);
  return true;
}

void DummyJournal::End() { header()->used_bytes.store(0, std::memory_order_release); }

msg::ClientId DummyJournal::owner() const { return header()->owner; }

Result<std::vector<std::string>> DummyJournal::Pending() const {
  const uint64_t used = header()->used_bytes.load(std::memory_order_acquire);
  if (used > kKeyRoom) return Error(ErrorCode::PROTOCOL_ERROR, "put journal overrun");
  std::vector<std::string> out;
  for (uint64_t at = 0; at < used;) {
    uint32_t n = 0;
    if (used - at < sizeof(n)) return Error(ErrorCode::PROTOCOL_ERROR, "put journal cut short");
    std::memcpy(&n, keys_at(at), sizeof(n));
    at += sizeof(n);
    if (n > used - at) return Error(ErrorCode::PROTOCOL_ERROR, "put journal key cut short");
    out.emplace_back(reinterpret_cast<const char*>(keys_at(at)), n);
    at += n;
  }
  return out;
}

}  // namespace mc::client

#include "client/dummy_forgets.h"

#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <string>

namespace mc::client {

namespace {

size_t Slot(std::string_view key) { return std::hash<std::string_view>{}(key) & (kForgetSlots - 1); }

Status Errno(const char* what) {
  return Error(ErrorCode::INTERNAL_ERROR, std::string(what) + ": " + std::strerror(errno));
}

}  // namespace

uint64_t ForgetMark(const ForgetTable& t, std::string_view key) {
  // Both only grow, so their sum changes when either does.
  return t.slots[Slot(key)].load(std::memory_order_acquire) + t.all.load(std::memory_order_acquire);
}

void BumpForget(ForgetTable& t, std::string_view key) {
  t.slots[Slot(key)].fetch_add(1, std::memory_order_acq_rel);
}

void BumpForgetAll(ForgetTable& t) { t.all.fetch_add(1, std::memory_order_acq_rel); }

Status HoldAlive(ForgetTable& t) {
  int rc = ::pthread_mutex_lock(&t.alive);
  if (rc == EOWNERDEAD) rc = ::pthread_mutex_consistent(&t.alive);
  if (rc != 0) return Error(ErrorCode::INTERNAL_ERROR, std::string("forget table: ") + std::strerror(rc));
  return Status::Ok();
}

void ReleaseAlive(ForgetTable& t) { (void)::pthread_mutex_unlock(&t.alive); }

bool OwnerAlive(const ForgetTable& t) {
  // The futex word of a robust mutex: the holder's tid, and FUTEX_OWNER_DIED
  // (tid cleared) once the kernel found the holder dead at its exit.
  const int word = __atomic_load_n(&t.alive.__data.__lock, __ATOMIC_ACQUIRE);
  return (word & FUTEX_TID_MASK) != 0 && (word & FUTEX_OWNER_DIED) == 0;
}

Result<ForgetTable*> CreateForgetTable(int* fd) {
  *fd = ::memfd_create("mooncake-dummy-forgets", MFD_CLOEXEC);
  if (*fd < 0) return Errno("memfd_create of the forget table");
  if (::ftruncate(*fd, sizeof(ForgetTable)) != 0) {
    ::close(*fd);
    *fd = -1;
    return Errno("sizing the forget table");
  }
  void* at = ::mmap(nullptr, sizeof(ForgetTable), PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
  if (at == MAP_FAILED) {
    ::close(*fd);
    *fd = -1;
    return Errno("mapping the forget table");
  }
  auto* t = new (at) ForgetTable();  // a fresh memfd is zeroed; this starts the atomics' lives
  pthread_mutexattr_t attr;
  ::pthread_mutexattr_init(&attr);
  ::pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  ::pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  const int rc = ::pthread_mutex_init(&t->alive, &attr);
  ::pthread_mutexattr_destroy(&attr);
  if (rc != 0) {
    ::munmap(at, sizeof(ForgetTable));
    ::close(*fd);
    *fd = -1;
    return Error(ErrorCode::INTERNAL_ERROR, std::string("forget table mutex: ") + std::strerror(rc));
  }
  return t;
}

Result<const ForgetTable*> MapForgetTable(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Errno("fstat of the forget table");
  if (static_cast<uint64_t>(st.st_size) != sizeof(ForgetTable)) {
    return Error(ErrorCode::PROTOCOL_ERROR, "forget table of " + std::to_string(st.st_size) +
                                                " bytes, expected " +
                                                std::to_string(sizeof(ForgetTable)));
  }
  void* at = ::mmap(nullptr, sizeof(ForgetTable), PROT_READ, MAP_SHARED, fd, 0);
  if (at == MAP_FAILED) return Errno("mapping the forget table");
  return static_cast<const ForgetTable*>(at);
}

void UnmapForgetTable(const ForgetTable* t) {
  if (t != nullptr) ::munmap(const_cast<ForgetTable*>(t), sizeof(ForgetTable));
}

}  // namespace mc::client

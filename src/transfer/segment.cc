#include "transfer/segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "common/log.h"
#include "transfer/memory_budget.h"

namespace mc::transfer {

namespace {

constexpr uint64_t kSmallPageBytes = 4096;
constexpr uint64_t kHugePageBytes = 2ull << 20;

uint64_t RoundUp(uint64_t value, uint64_t unit) { return (value + unit - 1) / unit * unit; }

// True when the kernel may back shared memory with transparent huge pages
// after madvise: shmem_enabled is not "[never]" or "[deny]".
bool ShmemThpAllowed() {
  FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/shmem_enabled", "r");
  if (f == nullptr) return false;
  char line[256] = {0};
  bool ok = std::fgets(line, sizeof(line), f) != nullptr;
  std::fclose(f);
  return ok && std::strstr(line, "[never]") == nullptr && std::strstr(line, "[deny]") == nullptr;
}

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// Maps `fd` (already sized to `bytes`) shared read/write; nullptr on failure.
uint8_t* MapShared(int fd, uint64_t bytes, bool populate) {
  int flags = MAP_SHARED | (populate ? MAP_POPULATE : 0);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

}  // namespace

std::string_view PageKindName(PageKind kind) {
  switch (kind) {
    case PageKind::kHugeTlb: return "hugetlb";
    case PageKind::kTransparentHuge: return "thp-advised";
    case PageKind::kNormal: return "normal";
  }
  return "unknown";
}

uint64_t FreeHugePages() {
  FILE* f = std::fopen("/proc/meminfo", "r");
  if (f == nullptr) return 0;
  char line[256];
  unsigned long long free_pages = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "HugePages_Free: %llu", &free_pages) == 1) break;
  }
  std::fclose(f);
  return free_pages;
}

std::string HugePageAdvice(uint64_t segment_bytes, uint64_t free_huge_pages) {
  const uint64_t needed = RoundUp(segment_bytes, kHugePageBytes) / kHugePageBytes;
  if (free_huge_pages >= needed) return "";
  return "the segment needs " + std::to_string(needed) + " free 2 MiB huge pages and " +
         std::to_string(free_huge_pages) +
         " are free; reserving them (sysctl vm.nr_hugepages, see mooncake-store(1)) "
         "makes transfers faster on most machines";
}

int SweepStaleShmFiles(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return 0;
  int removed = 0;
  const uid_t me = geteuid();
  while (dirent* e = readdir(d)) {
    long pid = 0;
    char rest[64];
    if (std::sscanf(e->d_name, "mooncake-%ld-%63s", &pid, rest) != 2 || pid <= 0) continue;
    std::string path = dir + "/" + e->d_name;
    struct stat st;
    if (lstat(path.c_str(), &st) != 0 || st.st_uid != me || !S_ISREG(st.st_mode)) continue;
    // kill(pid, 0) fails with ESRCH only when no such process exists.
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    if (unlink(path.c_str()) == 0) {
      ++removed;
      MC_LOG(INFO) << "removed stale segment file " << path << " of dead pid " << pid;
    }
  }
  closedir(d);
  return removed;
}

Status Segment::OpenMemfd(const SegmentOptions& options) {
  // hugetlb first: needs pages reserved in /proc/sys/vm/nr_hugepages, and
  // mmap (not ftruncate) is where a shortage shows, so try the whole path.
  if (options.try_huge_pages) {
    int fd = memfd_create("mooncake-segment", MFD_CLOEXEC | MFD_HUGETLB);
    uint64_t bytes = RoundUp(options.size_bytes, kHugePageBytes);
    if (fd >= 0 && ftruncate(fd, static_cast<off_t>(bytes)) == 0) {
      if (uint8_t* p = MapShared(fd, bytes, options.populate)) {
        fd_ = fd;
        base_ = p;
        mapped_bytes_ = bytes;
        page_kind_ = PageKind::kHugeTlb;
      }
    }
    if (base_ == nullptr && fd >= 0) close(fd);
  }
  if (base_ == nullptr) {
    fd_ = memfd_create("mooncake-segment", MFD_CLOEXEC);
    if (fd_ < 0) return Error(ErrorCode::INTERNAL_ERROR, Errno("memfd_create"));
  }
  // memfds are born 0777; owner-only is what makes sharing by path safe.
  if (fchmod(fd_, 0600) != 0) {
    return Error(ErrorCode::INTERNAL_ERROR, Errno("fchmod segment memfd"));
  }
  shm_path_ = "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(fd_);
  return Status::Ok();
}

Status Segment::OpenShmFile(const SegmentOptions& options) {
  SweepStaleShmFiles(options.shm_dir);
  std::random_device rd;
  for (int attempt = 0; attempt < 8 && fd_ < 0; ++attempt) {
    char name[64];
    std::snprintf(name, sizeof(name), "mooncake-%d-%08x", static_cast<int>(getpid()), rd());
    std::string path = options.shm_dir + "/" + name;
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
      fd_ = fd;
      shm_path_ = path;
      unlink_on_close_ = true;
      // The umask may have stripped bits from 0600; we want exactly 0600.
      if (fchmod(fd, 0600) != 0) return Error(ErrorCode::INTERNAL_ERROR, Errno("fchmod"));
    } else if (errno != EEXIST) {
      return Error(ErrorCode::INTERNAL_ERROR, Errno(("open " + path).c_str()));
    }
  }
  if (fd_ < 0) return Error(ErrorCode::INTERNAL_ERROR, "no free segment file name");
  return Status::Ok();
}

Status Segment::MapSmallPages(const SegmentOptions& options) {
  uint64_t bytes = RoundUp(options.size_bytes, kSmallPageBytes);
  if (ftruncate(fd_, static_cast<off_t>(bytes)) != 0) {
    return Error(ErrorCode::NO_AVAILABLE_HANDLE, Errno("ftruncate segment"));
  }
  base_ = MapShared(fd_, bytes, false);
  if (base_ == nullptr) return Error(ErrorCode::NO_AVAILABLE_HANDLE, Errno("mmap segment"));
  mapped_bytes_ = bytes;
  // madvise succeeds even when shmem THP is disabled, so the sysfs knob
  // decides what we report.
  if (options.try_huge_pages && madvise(base_, bytes, MADV_HUGEPAGE) == 0 && ShmemThpAllowed()) {
    page_kind_ = PageKind::kTransparentHuge;
  }
  if (options.populate) {
    Prefault();
  }
  return Status::Ok();
}

uint64_t EpochsOffset(uint64_t data_bytes) { return RoundUp(data_bytes, kSmallPageBytes); }

uint64_t SegmentFileBytes(uint64_t data_bytes) {
  return EpochsOffset(data_bytes) + WriteEpochs::Words(data_bytes) * sizeof(uint64_t) +
         kEpochTrailerBytes;
}

WriteEpochs EpochsOfMapping(uint8_t* base, uint64_t file_bytes, uint64_t* data_bytes) {
  *data_bytes = 0;
  if (file_bytes < kEpochTrailerBytes) return {};
  uint64_t t[5];
  std::memcpy(t, base + file_bytes - kEpochTrailerBytes, sizeof t);
  if (t[0] != kEpochTrailerMagic || t[3] != WriteEpochs::kRegionShift ||
      t[2] != EpochsOffset(t[1]) || SegmentFileBytes(t[1]) > file_bytes) {
    return {};
  }
  *data_bytes = t[1];
  if ((t[4] & kEpochsBypassed) != 0) return {};
  return WriteEpochs(reinterpret_cast<std::atomic<uint64_t>*>(base + t[2]), t[1]);
}

void Segment::MarkEpochsBypassed() {
  const uint64_t flags = kEpochsBypassed;
  std::memcpy(base_ + mapped_bytes_ - kEpochTrailerBytes + 4 * sizeof(uint64_t), &flags,
              sizeof flags);
  epochs_ = WriteEpochs();
}

Result<std::unique_ptr<Segment>> Segment::Create(const SegmentOptions& data_options) {
  if (data_options.size_bytes == 0 || data_options.size_bytes > kMaxSegmentBytes) {
    return Error(ErrorCode::INVALID_PARAMS,
                 "segment size " + std::to_string(data_options.size_bytes) +
                     " bytes is outside 1 .. " + std::to_string(kMaxSegmentBytes));
  }
  // The file holds the data, then the write epochs and their trailer.
  SegmentOptions options = data_options;
  options.size_bytes = SegmentFileBytes(data_options.size_bytes);
  std::unique_ptr<Segment> seg(new Segment());
  seg->size_bytes_ = data_options.size_bytes;
  seg->backing_ = options.backing;
  MC_RETURN_IF_ERROR(options.backing == SegmentBacking::kMemfd ? seg->OpenMemfd(options)
                                                               : seg->OpenShmFile(options));
  if (seg->base_ == nullptr) MC_RETURN_IF_ERROR(seg->MapSmallPages(options));
  // Huge pages were reserved by mmap; ordinary pages are only promised, and
  // a promise the host cannot keep ends in the OOM killer mid-prefault.
  if (options.check_memory && seg->page_kind_ != PageKind::kHugeTlb) {
    const std::string shm_dir = options.backing == SegmentBacking::kShmFile ? options.shm_dir : "";
    MC_RETURN_IF_ERROR(CheckSegmentFits(options.size_bytes, ReadMemoryFacts(shm_dir)));
  }
  const uint64_t trailer[5] = {kEpochTrailerMagic, seg->size_bytes_,
                               EpochsOffset(seg->size_bytes_), WriteEpochs::kRegionShift, 0};
  std::memcpy(seg->base_ + seg->mapped_bytes_ - kEpochTrailerBytes, trailer, sizeof trailer);
  uint64_t data_bytes = 0;
  seg->epochs_ = EpochsOfMapping(seg->base_, seg->mapped_bytes_, &data_bytes);
  assert(seg->epochs_.valid() && data_bytes == seg->size_bytes_);
  MC_LOG(DEBUG) << "segment of " << seg->size_bytes_ << " bytes at " << seg->shm_path_
                << " pages " << PageKindName(seg->page_kind_);
  return seg;
}

uint64_t Segment::Prefault(std::stop_token stop, uint64_t chunk_bytes) {
  const uint64_t page = page_kind_ == PageKind::kHugeTlb ? kHugePageBytes : kSmallPageBytes;
  chunk_bytes = RoundUp(std::max<uint64_t>(chunk_bytes, page), page);
  uint64_t done = 0;
  while (done < mapped_bytes_ && !stop.stop_requested()) {
    const uint64_t n = std::min(chunk_bytes, mapped_bytes_ - done);
    if (madvise(base_ + done, n, 23 /* MADV_POPULATE_WRITE */) != 0) {
      // Before Linux 5.14. An atomic add of 0 writes the page without
      // changing it, even under a concurrent transfer into it.
      for (uint64_t off = 0; off < n; off += page) {
        __atomic_fetch_add(base_ + done + off, uint8_t{0}, __ATOMIC_RELAXED);
      }
    }
    done += n;
  }
  return done;
}

Segment::~Segment() {
  if (base_ != nullptr) munmap(base_, mapped_bytes_);
  if (fd_ >= 0) close(fd_);
  if (unlink_on_close_) unlink(shm_path_.c_str());
}

}  // namespace mc::transfer

#include "tier/disk_tier.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "common/log.h"
#include "tier/crc32c.h"
#include "tier/object_file.h"

namespace mc::tier {

namespace {

constexpr const char* kObjectSuffix = ".mco";
constexpr const char* kTempSuffix = ".tmp";

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

bool EndsWith(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

DiskTier::DiskTier(const TierOptions& options)
    : options_(options), fds_(options.cached_fds) {}
DiskTier::~DiskTier() = default;

Result<std::unique_ptr<DiskTier>> DiskTier::Open(const TierOptions& options) {
  if (options.max_inflight == 0)
    return Error(ErrorCode::INVALID_PARAMS, "disk tier: max_inflight must be positive");
  std::unique_ptr<DiskTier> tier(new DiskTier(options));
  if (tier->options_.pause_mid_write_signal.empty()) {
    const char* signal = std::getenv(kPauseMidWriteEnv);
    if (signal != nullptr) tier->options_.pause_mid_write_signal = signal;
  }
  const IoShape shape{options.chunks_in_flight, options.io_chunk_bytes, options.io_uring};
  for (uint32_t i = 0; i < options.max_inflight; ++i) {
    auto lane = ObjectIo::Make(shape);
    if (!lane.ok()) return lane.status();
    tier->counters_.io_uring = (*lane)->uring();
    tier->free_.push_back(lane->get());
    tier->lanes_.push_back(std::move(*lane));
  }
  const std::string objects = options.path + "/objects";
  for (const std::string& dir : {options.path, objects}) {
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      return Error(ErrorCode::FILE_OPEN_FAIL, Errno("disk tier: mkdir " + dir));
  }
  tier->counters_.capacity_bytes = options.capacity_bytes;
  if (Status st = tier->Scan(); !st.ok()) return st;
  tier->pool_ = std::make_unique<FilePool>(
      FilePoolOptions{objects, options.spare_files, options.direct_io});
  return tier;
}

std::string DiskTier::FileName(uint64_t generation) const {
  char name[32];
  std::snprintf(name, sizeof name, "%016" PRIx64, generation);
  return options_.path + "/objects/" + name;
}

Result<int> DiskTier::OpenFile(const std::string& name, int flags) {
  bool direct = false;
  auto fd = OpenTierFile(name, flags, options_.direct_io, &direct);
  if (fd.ok() && direct) {
    std::lock_guard lock(mu_);
    counters_.direct_io = true;
  }
  return fd;
}

Result<SpareFile> DiskTier::TempFile(const DiskObjectInfo& info) {
  if (std::optional<SpareFile> spare = pool_->Take(info.file_bytes)) {
    std::lock_guard lock(mu_);
    ++counters_.spare_writes;
    if (spare->direct) counters_.direct_io = true;
    return std::move(*spare);
  }
  SpareFile made{FileName(info.generation) + kTempSuffix, -1, info.file_bytes, false};
  auto fd = OpenFile(made.name, O_RDWR | O_CREAT | O_EXCL);
  if (!fd.ok()) return fd.status();
  made.fd = *fd;
  // The whole file's blocks at once: writes then land inside the file
  // instead of extending it piece by piece (where the file system allows
  // it; ENOSPC shows here first).
  if (fallocate(made.fd, 0, 0, static_cast<off_t>(info.file_bytes)) != 0 && errno != EOPNOTSUPP) {
    Status st = Error(ErrorCode::FILE_WRITE_FAIL, Errno("disk tier: fallocate of '" + info.key + "'"));
    close(made.fd);
    unlink(made.name.c_str());
    return st;
  }
  return made;
}

void DiskTier::Retire(const DiskObjectInfo& info) {
  fds_.Drop(info.generation);
  const std::string name = FileName(info.generation) + kObjectSuffix;
  const std::string spare = pool_->SpareName();
  if (rename(name.c_str(), spare.c_str()) == 0) {
    pool_->Give(spare, info.file_bytes);
  } else {
    unlink(name.c_str());
  }
}

Result<std::shared_ptr<CachedFile>> DiskTier::ReadHandle(const DiskObjectInfo& info) {
  if (std::shared_ptr<CachedFile> cached = fds_.Get(info.generation)) return cached;
  auto fd = OpenFile(FileName(info.generation) + kObjectSuffix, O_RDONLY);
  if (!fd.ok()) return fd.status();
  auto file = std::make_shared<CachedFile>(*fd);
  fds_.Put(info.generation, file);
  return file;
}

ObjectIo* DiskTier::Acquire() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !free_.empty(); });
  ObjectIo* lane = free_.back();
  free_.pop_back();
  return lane;
}

void DiskTier::Release(ObjectIo* lane) {
  {
    std::lock_guard lock(mu_);
    free_.push_back(lane);
  }
  cv_.notify_one();
}

void DiskTier::PauseMidWrite() {
  const std::string& signal = options_.pause_mid_write_signal;
  MC_LOG(WARN) << "disk tier: test crash point: a write is paused mid-object (" << signal << ")";
  if (FILE* f = std::fopen(signal.c_str(), "w")) std::fclose(f);
  for (;;) pause();  // until the test kills the process
}

Status DiskTier::Scan() {
  const std::string dir = options_.path + "/objects";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return Error(ErrorCode::FILE_OPEN_FAIL, Errno("opendir " + dir));
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  closedir(d);
  std::vector<uint8_t> head(kFixedHeaderBytes + kMaxObjectKeyBytes);
  uint64_t spares = 0;
  for (const std::string& name : names) {
    const std::string full = dir + "/" + name;
    if (EndsWith(name, kSpareSuffix)) {  // the last run's spare files (tier/file_pool.h)
      unlink(full.c_str());
      ++spares;
      continue;
    }
    auto drop = [&](const char* why) {
      MC_LOG(WARN) << "disk tier: deleting " << full << ": " << why;
      unlink(full.c_str());
      ++counters_.dropped_at_open;
    };
    if (!EndsWith(name, kObjectSuffix)) {
      drop(EndsWith(name, kTempSuffix) ? "unfinished write" : "not an object file");
      continue;
    }
    Fd f{open(full.c_str(), O_RDONLY | O_CLOEXEC)};
    struct stat st{};
    if (f.fd < 0 || fstat(f.fd, &st) != 0) {
      drop("unreadable");
      continue;
    }
    const ssize_t got = pread(f.fd, head.data(), head.size(), 0);
    auto h = DecodeHeader(head.data(), got < 0 ? 0 : static_cast<size_t>(got));
    if (!h.ok() || static_cast<uint64_t>(st.st_size) != h->file_bytes() ||
        FileName(h->generation) + kObjectSuffix != full) {
      drop("torn or foreign header");
      continue;
    }
    DiskObjectInfo info{h->key, h->size_bytes, h->generation, h->file_bytes()};
    next_generation_ = std::max(next_generation_, info.generation + 1);
    auto [it, fresh] = index_.try_emplace(info.key, info);
    if (!fresh) {  // two generations of a key: the newer wins
      DiskObjectInfo older = it->second;
      if (older.generation > info.generation) std::swap(older, info);
      it->second = info;
      unlink((FileName(older.generation) + kObjectSuffix).c_str());
      ++counters_.dropped_at_open;
    }
  }
  if (spares > 0) MC_LOG(INFO) << "disk tier: deleted " << spares << " spare files of the last run";
  for (const auto& [key, info] : index_) counters_.used_bytes += info.file_bytes;
  counters_.objects = index_.size();
  return Status::Ok();
}

Status DiskTier::WriteFile(int fd, const DiskObjectInfo& info, const void* data) {
  ObjectIo* lane = Acquire();
  std::function<void()> pause;
  if (!options_.pause_mid_write_signal.empty()) pause = [this] { PauseMidWrite(); };
  Status st = lane->Write(fd, ObjectHeader{info.key, info.size_bytes, info.generation, 0},
                          static_cast<const uint8_t*>(data), pause);
  Release(lane);
  if (st.ok() && options_.sync && fdatasync(fd) != 0) st = Error(ErrorCode::FILE_WRITE_FAIL, Errno("fdatasync"));
  if (!st.ok())
    return Error(st.code(), "disk tier: write of '" + info.key + "': " + st.message());
  return Status::Ok();
}

Result<DiskObjectInfo> DiskTier::Write(std::string_view key, const void* data, uint64_t size) {
  if (key.empty() || key.size() > kMaxObjectKeyBytes)
    return Error(ErrorCode::INVALID_KEY, "disk tier: key of " + std::to_string(key.size()) +
                                             " bytes (1.." +
                                             std::to_string(kMaxObjectKeyBytes) + ")");
  DiskObjectInfo info{std::string(key), size, 0, 0};
  info.file_bytes = ObjectHeader{info.key, size, 0, 0}.file_bytes();
  {
    std::lock_guard lock(mu_);
    auto old = index_.find(key);
    const uint64_t replaced = old == index_.end() ? 0 : old->second.file_bytes;
    if (counters_.used_bytes + reserved_bytes_ + info.file_bytes >
        options_.capacity_bytes + replaced) {
      ++counters_.no_space;
      return Error(ErrorCode::NO_AVAILABLE_HANDLE,
                   "disk tier full: " + std::to_string(counters_.used_bytes) + " of " +
                       std::to_string(options_.capacity_bytes) + " bytes used, '" + info.key +
                       "' needs " + std::to_string(info.file_bytes));
    }
    info.generation = next_generation_++;
    reserved_bytes_ += info.file_bytes;
  }
  const std::string final_name = FileName(info.generation) + kObjectSuffix;
  std::string temp_name;
  std::shared_ptr<CachedFile> file;  // kept open for reads once in place
  Status st;
  if (auto temp = TempFile(info); !temp.ok()) {
    st = temp.status();
  } else {
    temp_name = temp->name;
    file = std::make_shared<CachedFile>(temp->fd);
    st = WriteFile(file->fd, info, data);
  }
  if (st.ok() && rename(temp_name.c_str(), final_name.c_str()) != 0)
    st = Error(ErrorCode::FILE_WRITE_FAIL, Errno("rename " + temp_name));
  // Cached before the index shows the object, so a Remove that follows
  // finds the entry to drop.
  if (st.ok()) fds_.Put(info.generation, std::move(file));
  std::optional<DiskObjectInfo> superseded;
  bool warn = false;
  {
    std::lock_guard lock(mu_);
    reserved_bytes_ -= info.file_bytes;
    if (!st.ok()) {
      ++counters_.io_errors;
      if (st.message().find(std::strerror(ENOSPC)) != std::string::npos) ++counters_.no_space;
      // The 1st, 2nd, 4th, 8th... failure: a full disk fails every write,
      // and the log says so without repeating it for each.
      warn = (counters_.io_errors & (counters_.io_errors - 1)) == 0;
    } else {
      auto [it, fresh] = index_.try_emplace(info.key, info);
      if (!fresh && it->second.generation > info.generation) {
        superseded = info;  // a newer write of the key finished first
      } else {
        if (!fresh) {
          superseded = it->second;
          counters_.used_bytes -= it->second.file_bytes;
        }
        it->second = info;
        counters_.used_bytes += info.file_bytes;
      }
      counters_.objects = index_.size();
      ++counters_.writes;
      counters_.write_bytes += size;
    }
  }
  if (!st.ok()) {
    if (!temp_name.empty()) unlink(temp_name.c_str());
    if (warn)
      MC_LOG(WARN) << st.message() << " (" << counters().io_errors
                   << " failed disk-tier writes so far; this object is not on disk)";
    return st;
  }
  if (superseded) Retire(*superseded);
  return info;
}

Status DiskTier::ReadFile(int fd, const DiskObjectInfo& info, void* out) {
  ObjectIo* lane = Acquire();
  Status st = lane->Read(fd, ObjectHeader{info.key, info.size_bytes, info.generation, 0},
                         static_cast<uint8_t*>(out));
  Release(lane);
  if (st.code() == ErrorCode::CHECKSUM_MISMATCH)
    return Error(st.code(), "disk tier: '" + info.key + "' failed its checksum (" + st.message() +
                                "); the file is dropped");
  if (!st.ok()) return Error(st.code(), "disk tier: read of '" + info.key + "': " + st.message());
  return Status::Ok();
}

Result<uint64_t> DiskTier::Read(std::string_view key, void* out, uint64_t out_size) {
  std::optional<DiskObjectInfo> info = Find(key);
  if (!info) return Error(ErrorCode::OBJECT_NOT_FOUND, "disk tier: no '" + std::string(key) + "'");
  if (out_size < info->size_bytes)
    return Error(ErrorCode::BUFFER_OVERFLOW, "disk tier: '" + info->key + "' has " +
                                                 std::to_string(info->size_bytes) +
                                                 " bytes, the buffer " +
                                                 std::to_string(out_size));
  Status st;
  auto file = ReadHandle(*info);
  if (!file.ok()) {
    // Removed or replaced since Find: the newer version is the answer.
    std::optional<DiskObjectInfo> now = Find(key);
    if (now && now->generation != info->generation) return Read(key, out, out_size);
    if (!now) return Error(ErrorCode::OBJECT_NOT_FOUND, "disk tier: no '" + std::string(key) + "'");
    st = file.status();
  } else {
    st = ReadFile((*file)->fd, *info, out);
  }
  std::unique_lock lock(mu_);
  if (st.ok()) {
    ++counters_.reads;
    counters_.read_bytes += info->size_bytes;
    return info->size_bytes;
  }
  auto it = index_.find(key);
  const bool current = it != index_.end() && it->second.generation == info->generation;
  if (st.code() == ErrorCode::CHECKSUM_MISMATCH && !current) {
    // Removed or replaced while it was read: its file may be a spare that a
    // write is filling. Not a failure of the disk; the index has the answer.
    lock.unlock();
    if (Find(key)) return Read(key, out, out_size);
    return Error(ErrorCode::OBJECT_NOT_FOUND, "disk tier: no '" + std::string(key) + "'");
  }
  if (st.code() == ErrorCode::CHECKSUM_MISMATCH) {
    ++counters_.checksum_failures;
    MC_LOG(WARN) << st.message();
    counters_.used_bytes -= it->second.file_bytes;
    index_.erase(it);
    counters_.objects = index_.size();
    fds_.Drop(info->generation);
    unlink((FileName(info->generation) + kObjectSuffix).c_str());
  } else {
    ++counters_.io_errors;
  }
  return st;
}

Status DiskTier::Remove(std::string_view key) {
  DiskObjectInfo info;
  {
    std::lock_guard lock(mu_);
    auto it = index_.find(key);
    if (it == index_.end())
      return Error(ErrorCode::OBJECT_NOT_FOUND, "disk tier: no '" + std::string(key) + "'");
    info = it->second;
    counters_.used_bytes -= info.file_bytes;
    index_.erase(it);
    counters_.objects = index_.size();
    ++counters_.removes;
  }
  Retire(info);
  return Status::Ok();
}

std::optional<DiskObjectInfo> DiskTier::Find(std::string_view key) const {
  std::lock_guard lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

std::vector<DiskObjectInfo> DiskTier::List() const {
  std::lock_guard lock(mu_);
  std::vector<DiskObjectInfo> out;
  out.reserve(index_.size());
  for (const auto& [key, info] : index_) out.push_back(info);
  return out;
}

TierCounters DiskTier::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

}  // namespace mc::tier

#include "tier/disk_tier.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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

// pwritev/preadv of every iovec, advancing past short transfers.
bool FullIov(bool write, int fd, iovec* iov, int count, uint64_t off) {
  while (count > 0) {
    const ssize_t r = write ? pwritev(fd, iov, count, static_cast<off_t>(off))
                            : preadv(fd, iov, count, static_cast<off_t>(off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) errno = EIO;
      return false;
    }
    off += static_cast<uint64_t>(r);
    size_t left = static_cast<size_t>(r);
    while (count > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<uint8_t*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return true;
}

// pwrite/pread of the whole range.
bool FullIo(bool write, int fd, uint8_t* p, size_t n, uint64_t off) {
  iovec one{p, n};
  return FullIov(write, fd, &one, 1, off);
}

bool BlockAligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kBlockBytes == 0; }

}  // namespace

struct DiskTier::Bounce {
  uint8_t* data = nullptr;
  ~Bounce() { std::free(data); }
};

DiskTier::DiskTier(const TierOptions& options) : options_(options) {}
DiskTier::~DiskTier() = default;

Result<std::unique_ptr<DiskTier>> DiskTier::Open(const TierOptions& options) {
  if (options.io_chunk_bytes == 0 || options.io_chunk_bytes % kBlockBytes != 0 ||
      options.max_inflight == 0)
    return Error(ErrorCode::INVALID_PARAMS, "disk tier: io chunk must be a positive multiple of " +
                                                std::to_string(kBlockBytes) +
                                                " bytes and max_inflight positive");
  std::unique_ptr<DiskTier> tier(new DiskTier(options));
  for (uint32_t i = 0; i < options.max_inflight; ++i) {
    auto b = std::make_unique<Bounce>();
    if (posix_memalign(reinterpret_cast<void**>(&b->data), kBlockBytes,
                       options.io_chunk_bytes) != 0)
      return Error(ErrorCode::INTERNAL_ERROR, "disk tier: cannot allocate bounce buffers");
    tier->free_.push_back(b.get());
    tier->pool_.push_back(std::move(b));
  }
  const std::string objects = options.path + "/objects";
  for (const std::string& dir : {options.path, objects}) {
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      return Error(ErrorCode::FILE_OPEN_FAIL, Errno("disk tier: mkdir " + dir));
  }
  tier->counters_.capacity_bytes = options.capacity_bytes;
  if (Status st = tier->Scan(); !st.ok()) return st;
  return tier;
}

std::string DiskTier::FileName(uint64_t generation) const {
  char name[32];
  std::snprintf(name, sizeof name, "%016" PRIx64, generation);
  return options_.path + "/objects/" + name;
}

Result<int> DiskTier::OpenFile(const std::string& name, int flags) {
  int fd = -1;
  if (options_.direct_io) {
    fd = open(name.c_str(), flags | O_DIRECT | O_CLOEXEC, 0600);
    if (fd >= 0) {
      std::lock_guard lock(mu_);
      counters_.direct_io = true;
      return fd;
    }
    if (errno != EINVAL) return Error(ErrorCode::FILE_OPEN_FAIL, Errno("open " + name));
  }
  fd = open(name.c_str(), flags | O_CLOEXEC, 0600);  // tmpfs and others without O_DIRECT
  if (fd < 0) return Error(ErrorCode::FILE_OPEN_FAIL, Errno("open " + name));
  return fd;
}

DiskTier::Bounce* DiskTier::Acquire() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !free_.empty(); });
  Bounce* b = free_.back();
  free_.pop_back();
  return b;
}

void DiskTier::Release(Bounce* b) {
  {
    std::lock_guard lock(mu_);
    free_.push_back(b);
  }
  cv_.notify_one();
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
  for (const std::string& name : names) {
    const std::string full = dir + "/" + name;
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
  for (const auto& [key, info] : index_) counters_.used_bytes += info.file_bytes;
  counters_.objects = index_.size();
  return Status::Ok();
}

Status DiskTier::WriteFile(int fd, const DiskObjectInfo& info, const void* data) {
  ObjectHeader h{info.key, info.size_bytes, info.generation, 0};
  const uint64_t data_offset = h.data_offset();
  Bounce* b = Acquire();
  const auto* src = static_cast<const uint8_t*>(data);
  uint32_t crc = 0;
  bool ok = true;
  if (BlockAligned(src) && data_offset + kBlockBytes <= options_.io_chunk_bytes) {
    // Page-aligned memory (a segment): one write straight from it, the
    // header and the padded tail from the bounce buffer around it.
    const uint64_t body = info.size_bytes / kBlockBytes * kBlockBytes;
    const uint64_t tail = info.size_bytes - body;
    h.data_crc = Crc32c(0, src, info.size_bytes);
    EncodeHeader(h, b->data);
    uint8_t* tail_buf = b->data + data_offset;
    if (tail > 0) std::memcpy(tail_buf, src + body, tail);  // src may be null when empty
    std::memset(tail_buf + tail, 0, AlignToBlock(tail) - tail);
    iovec iov[3] = {{b->data, data_offset},
                    {const_cast<uint8_t*>(src), body},
                    {tail_buf, AlignToBlock(tail)}};
    ok = FullIov(true, fd, iov, 3, 0);
    if (ok && options_.sync) ok = fdatasync(fd) == 0;
    const int err = errno;
    Release(b);
    errno = err;
    if (!ok)
      return Error(ErrorCode::FILE_WRITE_FAIL, Errno("disk tier: write of '" + info.key + "'"));
    return Status::Ok();
  }
  for (uint64_t done = 0; ok && done < info.size_bytes;) {
    const uint64_t n = std::min(options_.io_chunk_bytes, info.size_bytes - done);
    std::memcpy(b->data, src + done, n);
    crc = Crc32c(crc, b->data, n);
    const uint64_t padded = AlignToBlock(n);
    std::memset(b->data + n, 0, padded - n);
    ok = FullIo(true, fd, b->data, padded, data_offset + done);
    done += n;
  }
  if (ok) {  // the header last: a file without one is never adopted
    h.data_crc = crc;
    std::vector<uint8_t> head;
    uint8_t* hp = b->data;
    if (data_offset > options_.io_chunk_bytes) {
      head.resize(data_offset + kBlockBytes);  // a key longer than a chunk: rare
      hp = head.data() + (kBlockBytes - reinterpret_cast<uintptr_t>(head.data()) % kBlockBytes);
    }
    EncodeHeader(h, hp);
    ok = FullIo(true, fd, hp, data_offset, 0);
  }
  if (ok && options_.sync) ok = fdatasync(fd) == 0;
  const int err = errno;
  Release(b);
  if (!ok) {
    errno = err;
    return Error(ErrorCode::FILE_WRITE_FAIL, Errno("disk tier: write of '" + info.key + "'"));
  }
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
  const std::string temp_name = FileName(info.generation) + kTempSuffix;
  Status st;
  {
    auto fd = OpenFile(temp_name, O_WRONLY | O_CREAT | O_EXCL);
    if (!fd.ok()) {
      st = fd.status();
    } else {
      Fd f{*fd};
      // The whole file's blocks at once: writes then land inside the file
      // instead of extending it piece by piece (where the file system
      // allows it; ENOSPC shows here first).
      if (fallocate(f.fd, 0, 0, static_cast<off_t>(info.file_bytes)) != 0 &&
          errno != EOPNOTSUPP) {
        st = Error(ErrorCode::FILE_WRITE_FAIL, Errno("disk tier: fallocate of '" + info.key + "'"));
      } else {
        st = WriteFile(f.fd, info, data);
      }
    }
  }
  if (st.ok() && rename(temp_name.c_str(), final_name.c_str()) != 0)
    st = Error(ErrorCode::FILE_WRITE_FAIL, Errno("rename " + temp_name));
  std::optional<DiskObjectInfo> superseded;
  {
    std::lock_guard lock(mu_);
    reserved_bytes_ -= info.file_bytes;
    if (!st.ok()) {
      ++counters_.io_errors;
      if (st.message().find(std::strerror(ENOSPC)) != std::string::npos) ++counters_.no_space;
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
    unlink(temp_name.c_str());
    return st;
  }
  if (superseded) unlink((FileName(superseded->generation) + kObjectSuffix).c_str());
  return info;
}

Status DiskTier::ReadFile(int fd, const DiskObjectInfo& info, void* out) {
  const uint64_t data_offset = ObjectHeader{info.key, info.size_bytes, 0, 0}.data_offset();
  Bounce* b = Acquire();
  auto* dst = static_cast<uint8_t*>(out);
  uint32_t crc = 0;
  bool ok = true, read_data = false;
  const uint64_t body = info.size_bytes / kBlockBytes * kBlockBytes;
  const uint64_t tail = info.size_bytes - body;
  if (BlockAligned(dst) && data_offset + kBlockBytes <= options_.io_chunk_bytes) {
    // Page-aligned destination (a segment): one read, the header and the
    // padded tail into the bounce buffer, the body straight into `out`.
    iovec iov[3] = {{b->data, data_offset}, {dst, body}, {b->data + data_offset, AlignToBlock(tail)}};
    ok = FullIov(false, fd, iov, tail > 0 ? 3 : 2, 0);
    read_data = ok;
  } else {  // the header first; the data in chunks below once it checks out
    ok = FullIo(false, fd, b->data, std::min<uint64_t>(data_offset, options_.io_chunk_bytes), 0);
  }
  std::optional<ObjectHeader> h;
  if (ok) {
    auto decoded = DecodeHeader(b->data, std::min<uint64_t>(data_offset, options_.io_chunk_bytes));
    if (decoded.ok()) h = *decoded;
  }
  // The header must still be the object the index names.
  const bool corrupt = ok && (!h || h->key != info.key || h->size_bytes != info.size_bytes ||
                              h->generation != info.generation);
  if (read_data && !corrupt) {
    if (tail > 0) std::memcpy(dst + body, b->data + data_offset, tail);  // dst may be null when empty
    crc = Crc32c(0, dst, info.size_bytes);
  }
  for (uint64_t done = 0; ok && !read_data && !corrupt && done < info.size_bytes;) {
    const uint64_t n = std::min(options_.io_chunk_bytes, info.size_bytes - done);
    ok = FullIo(false, fd, b->data, AlignToBlock(n), data_offset + done);
    if (!ok) break;
    crc = Crc32c(crc, b->data, n);
    std::memcpy(dst + done, b->data, n);
    done += n;
  }
  const int err = errno;
  Release(b);
  if (!ok) {
    errno = err;
    return Error(ErrorCode::FILE_READ_FAIL, Errno("disk tier: read of '" + info.key + "'"));
  }
  if (corrupt || crc != h->data_crc)
    return Error(ErrorCode::CHECKSUM_MISMATCH,
                 "disk tier: '" + info.key + "' failed its checksum; the file is dropped");
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
  const std::string name = FileName(info->generation) + kObjectSuffix;
  Status st;
  auto fd = OpenFile(name, O_RDONLY);
  if (!fd.ok()) {
    // Removed or replaced since Find: the newer version is the answer.
    std::optional<DiskObjectInfo> now = Find(key);
    if (now && now->generation != info->generation) return Read(key, out, out_size);
    if (!now) return Error(ErrorCode::OBJECT_NOT_FOUND, "disk tier: no '" + std::string(key) + "'");
    st = fd.status();
  } else {
    Fd f{*fd};
    st = ReadFile(f.fd, *info, out);
  }
  std::lock_guard lock(mu_);
  if (st.ok()) {
    ++counters_.reads;
    counters_.read_bytes += info->size_bytes;
    return info->size_bytes;
  }
  if (st.code() == ErrorCode::CHECKSUM_MISMATCH) {
    ++counters_.checksum_failures;
    MC_LOG(WARN) << st.message();
    auto it = index_.find(key);
    if (it != index_.end() && it->second.generation == info->generation) {
      counters_.used_bytes -= it->second.file_bytes;
      index_.erase(it);
      counters_.objects = index_.size();
      unlink(name.c_str());
    }
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
  unlink((FileName(info.generation) + kObjectSuffix).c_str());
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

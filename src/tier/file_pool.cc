#include "tier/file_pool.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/log.h"

namespace mc::tier {

Result<int> OpenTierFile(const std::string& name, int flags, bool direct, bool* used_direct) {
  *used_direct = false;
  if (direct) {
    const int fd = open(name.c_str(), flags | O_DIRECT | O_CLOEXEC, 0600);
    if (fd >= 0) {
      *used_direct = true;
      return fd;
    }
    if (errno != EINVAL)
      return Error(ErrorCode::FILE_OPEN_FAIL, "open " + name + ": " + std::strerror(errno));
    // A file system without O_DIRECT (tmpfs before Linux 6.6) may refuse it
    // only after O_CREAT made the file: the name is the caller's own, so the
    // buffered open takes it over.
    if ((flags & O_CREAT) != 0) flags = (flags & ~O_EXCL) | O_TRUNC;
  }
  const int fd = open(name.c_str(), flags | O_CLOEXEC, 0600);
  if (fd < 0) return Error(ErrorCode::FILE_OPEN_FAIL, "open " + name + ": " + std::strerror(errno));
  return fd;
}

FilePool::FilePool(FilePoolOptions options) : options_(std::move(options)) {
  thread_ = std::thread([this] { Run(); });
}

FilePool::~FilePool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  thread_.join();
  for (SpareFile& s : ready_) {
    close(s.fd);
    unlink(s.name.c_str());
  }
  for (const Given& g : queued_) unlink(g.name.c_str());
}

std::string FilePool::SpareName() {
  std::lock_guard lock(mu_);
  return options_.dir + "/" + std::to_string(next_name_++) + kSpareSuffix;
}

std::optional<SpareFile> FilePool::Take(uint64_t bytes) {
  std::optional<SpareFile> out;
  {
    std::lock_guard lock(mu_);
    auto it = std::find_if(ready_.begin(), ready_.end(),
                           [&](const SpareFile& s) { return s.bytes == bytes; });
    if (it != ready_.end()) {
      out = std::move(*it);
      ready_.erase(it);
      ++counters_.taken;
    } else {
      ++counters_.missed;
    }
    // A size asked for twice in a row is worth making spares of; objects of
    // ever-changing sizes would only churn files in the background.
    if (bytes == last_asked_) want_bytes_ = bytes;
    last_asked_ = bytes;
    create_failed_ = false;
  }
  work_cv_.notify_one();
  return out;
}

void FilePool::Give(const std::string& name, uint64_t bytes) {
  {
    std::lock_guard lock(mu_);
    if (queued_.size() < kMaxQueuedFiles) {
      queued_.push_back({name, bytes});
      work_cv_.notify_one();
      return;
    }
    ++counters_.deleted;
  }
  unlink(name.c_str());  // the thread is far behind: pay here, stay bounded
}

bool FilePool::Idle() const {
  if (!queued_.empty() || busy_) return false;
  if (want_bytes_ == 0 || create_failed_) return true;
  const auto wanted = std::count_if(ready_.begin(), ready_.end(),
                                    [&](const SpareFile& s) { return s.bytes == want_bytes_; });
  return static_cast<uint32_t>(wanted) >= options_.ready_files;
}

void FilePool::Settle() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [&] { return Idle(); });
}

FilePoolCounters FilePool::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

size_t FilePool::ready() const {
  std::lock_guard lock(mu_);
  return ready_.size();
}

void FilePool::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (Idle()) idle_cv_.notify_all();
    work_cv_.wait(lock, [&] { return stopping_ || !Idle(); });
    if (stopping_) return;
    busy_ = true;
    if (!queued_.empty()) {
      Given g = std::move(queued_.front());
      queued_.pop_front();
      lock.unlock();
      Handle(std::move(g));
    } else {
      const uint64_t bytes = want_bytes_;
      lock.unlock();
      CreateOne(bytes);
    }
    lock.lock();
    busy_ = false;
  }
}

void FilePool::Handle(Given g) {
  bool keep = false;
  {
    std::lock_guard lock(mu_);
    const auto wanted = std::count_if(ready_.begin(), ready_.end(),
                                      [&](const SpareFile& s) { return s.bytes == want_bytes_; });
    keep = g.bytes == want_bytes_ && static_cast<uint32_t>(wanted) < options_.ready_files;
  }
  if (keep) {
    bool direct = false;
    auto fd = OpenTierFile(g.name, O_RDWR, options_.direct_io, &direct);
    if (fd.ok()) {
      std::lock_guard lock(mu_);
      ready_.push_back({g.name, *fd, g.bytes, direct});
      ++counters_.reused;
      return;
    }
  }
  unlink(g.name.c_str());
  std::lock_guard lock(mu_);
  ++counters_.deleted;
}

void FilePool::CreateOne(uint64_t bytes) {
  std::optional<SpareFile> dropped;  // a spare of another size makes room
  {
    std::lock_guard lock(mu_);
    if (ready_.size() >= options_.ready_files && !ready_.empty()) {
      auto it = std::find_if(ready_.begin(), ready_.end(),
                             [&](const SpareFile& s) { return s.bytes != bytes; });
      if (it != ready_.end()) {
        dropped = std::move(*it);
        ready_.erase(it);
        ++counters_.deleted;
      }
    }
  }
  if (dropped) {
    close(dropped->fd);
    unlink(dropped->name.c_str());
  }
  const std::string name = SpareName();
  bool direct = false;
  auto fd = OpenTierFile(name, O_RDWR | O_CREAT | O_EXCL, options_.direct_io, &direct);
  int err = fd.ok() ? 0 : EIO;
  // The whole file's blocks at once: the object's writes then land inside
  // the file instead of extending it (ENOSPC shows here, not mid-object).
  if (fd.ok() && fallocate(*fd, 0, 0, static_cast<off_t>(bytes)) != 0) {
    err = errno;
    // Without fallocate the size still has to be the object file's.
    if (err == EOPNOTSUPP && ftruncate(*fd, static_cast<off_t>(bytes)) == 0) err = 0;
  }
  std::lock_guard lock(mu_);
  if (err == 0) {
    ready_.push_back({name, *fd, bytes, direct});
    ++counters_.created;
    return;
  }
  if (fd.ok()) {
    close(*fd);
    unlink(name.c_str());
  }
  ++counters_.create_failures;
  create_failed_ = true;  // e.g. a full disk: try again after the next Take
}

}  // namespace mc::tier

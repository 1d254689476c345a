// FilePool: the disk tier's spare files (issue 31, point 5), so the file
// system's per-object work -- create, allocate, delete -- leaves the thread
// that moves the object.
//
// A spare is a file (`N.spare` in the objects directory) of exactly the size
// an object file needs, open for O_DIRECT reads and writes where the file
// system allows it. Spares come from two places:
//  - pre-created: a background thread creates and fallocates them, up to
//    `ready_files`, of the size the last two Take()s asked for (objects of
//    ever-changing sizes get none: the files would only churn);
//  - reused: a removed or replaced object's file, renamed by the tier to a
//    spare name (one rename on the caller's thread, so a crash cannot bring
//    the object back) and handed over with Give(). Its blocks are written
//    already, so writing the next object into them allocates nothing.
// Give() queues the file to the thread, which keeps it (up to `ready_files`
// spares of the wanted size) or deletes it; a full queue (kMaxQueuedFiles)
// deletes on the caller's thread instead, so memory stays bounded.
//
// A spare is overwritten in full (header and every data block) before it is
// renamed to an object's name, and a start deletes every `.spare` file, so
// a spare's old bytes never reach a reader. Spares use disk space beyond the
// tier's capacity: at most `ready_files` files, plus those queued to delete.
//
// Thread-safe. The destructor stops the thread and deletes every spare and
// queued file.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/result.h"

namespace mc::tier {

// Opens `name` with O_DIRECT when `direct` and the file system takes it,
// else buffered; *used_direct says which. With O_CREAT, a file system that
// refuses O_DIRECT only after creating the file gets it truncated and reopened
// buffered (the name is the caller's own).
Result<int> OpenTierFile(const std::string& name, int flags, bool direct, bool* used_direct);

inline constexpr const char* kSpareSuffix = ".spare";

struct SpareFile {
  std::string name;  // full path, ends in kSpareSuffix
  int fd = -1;       // the caller closes it
  uint64_t bytes = 0;
  bool direct = false;  // opened with O_DIRECT
};

struct FilePoolOptions {
  std::string dir;           // the objects directory
  uint32_t ready_files = 4;  // spares kept; 0: none (Give deletes in the thread)
  bool direct_io = true;
};

struct FilePoolCounters {
  uint64_t taken = 0;        // Take() answered with a spare
  uint64_t missed = 0;       // Take() found none of the size
  uint64_t created = 0;      // pre-created by the thread
  uint64_t reused = 0;       // given files kept as spares
  uint64_t deleted = 0;      // files deleted (by the thread or an overflow)
  uint64_t create_failures = 0;  // e.g. ENOSPC while pre-creating
};

class FilePool {
 public:
  // Files Give() may queue before it deletes on the caller's thread.
  static constexpr size_t kMaxQueuedFiles = 256;

  explicit FilePool(FilePoolOptions options);  // starts the thread
  ~FilePool();
  FilePool(const FilePool&) = delete;
  FilePool& operator=(const FilePool&) = delete;

  // A spare of exactly `bytes`, or nullopt (the caller makes its own file).
  // Asked for twice in a row, the thread makes spares of this size.
  std::optional<SpareFile> Take(uint64_t bytes);
  // A file renamed to SpareName(): kept as a spare or deleted, by the thread.
  void Give(const std::string& name, uint64_t bytes);
  // A fresh spare name in the directory.
  std::string SpareName();
  // Until the thread has nothing left to do (queued files handled, spares
  // made, or a creation failed since the last Take): for tests and shutdown.
  void Settle();
  FilePoolCounters counters() const;
  size_t ready() const;

 private:
  struct Given {
    std::string name;
    uint64_t bytes;
  };
  void Run();
  bool Idle() const;  // under mu_
  void Handle(Given g);
  void CreateOne(uint64_t bytes);

  const FilePoolOptions options_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_, idle_cv_;
  std::deque<SpareFile> ready_;  // all of want_bytes_ (older sizes are dropped)
  std::deque<Given> queued_;
  uint64_t want_bytes_ = 0;      // 0: no size asked for twice yet, nothing to pre-create
  uint64_t last_asked_ = 0;
  uint64_t next_name_ = 0;
  bool busy_ = false;            // the thread is handling something
  bool create_failed_ = false;   // until the next Take(): do not retry
  bool stopping_ = false;
  FilePoolCounters counters_;
  std::thread thread_;
};

}  // namespace mc::tier

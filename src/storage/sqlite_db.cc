#include "storage/sqlite_db.h"

#include <sqlite3.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/log.h"

namespace mc::storage {

namespace {
// How long a statement waits for a lock held by another connection before
// failing; with locking_mode=EXCLUSIVE this only matters at open.
constexpr int kBusyTimeoutMs = 1000;

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}
}  // namespace

SqliteDb::~SqliteDb() {
  if (wal_fd_ >= 0) ::close(wal_fd_);
  sqlite3_close(db_);
}

Result<std::unique_ptr<SqliteDb>> SqliteDb::Open(const std::string& path,
                                                 const SqliteSchema& schema) {
  assert(!path.empty());
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close(raw);
    return Error(ErrorCode::INTERNAL_ERROR, "cannot open database " + path + ": " + msg);
  }
  std::unique_ptr<SqliteDb> db(new SqliteDb(path, raw));
  if (Status st = db->Init(schema); !st.ok()) {
    int code = sqlite3_errcode(raw);
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED) {
      return Error(ErrorCode::INTERNAL_ERROR,
                   "database " + path + " is in use by another process (" + st.message() + ")");
    }
    return st;
  }
  return db;
}

Status SqliteDb::Init(const SqliteSchema& schema) {
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  MC_RETURN_IF_ERROR(Exec("PRAGMA locking_mode=EXCLUSIVE"));
  // WAL must be chosen before the exclusive lock is taken by a write.
  MC_RETURN_IF_ERROR(ExpectText("PRAGMA journal_mode=WAL", "wal"));
  MC_RETURN_IF_ERROR(Exec("PRAGMA synchronous=FULL"));
  // Takes and keeps the file lock now, so a second process fails at start.
  MC_RETURN_IF_ERROR(Exec("BEGIN EXCLUSIVE; COMMIT"));
  return CheckSchema(schema);
}

Status SqliteDb::CheckSchema(const SqliteSchema& schema) {
  MC_ASSIGN_OR_RETURN(int64_t version, QueryInt("PRAGMA user_version"));
  MC_ASSIGN_OR_RETURN(int64_t app, QueryInt("PRAGMA application_id"));
  const auto app_id = static_cast<uint32_t>(app);
  if (schema.application_id != 0 && app_id != schema.application_id) {
    MC_ASSIGN_OR_RETURN(int64_t tables, QueryInt("SELECT count(*) FROM sqlite_master"));
    if (app_id != 0 || version != 0 || tables != 0) {
      return Error(ErrorCode::INTERNAL_ERROR,
                   path_ + ": not a " + schema.kind + " database (application_id " +
                       Hex32(app_id) + ", user_version " + std::to_string(version) + ", " +
                       std::to_string(tables) + " schema objects; expected application_id " +
                       Hex32(schema.application_id) + ")");
    }
  }
  if (version == 0) {  // a new file: create the schema in one transaction
    std::string sql = std::string("BEGIN;") + schema.create_sql +
                      ";PRAGMA user_version = " + std::to_string(schema.version) + ";";
    if (schema.application_id != 0) {
      sql += "PRAGMA application_id = " + std::to_string(static_cast<int32_t>(schema.application_id)) + ";";
    }
    sql += "COMMIT";
    return Exec(sql.c_str());
  }
  if (version > 0 && version < schema.version) return Upgrade(schema, version);
  if (version != schema.version) {
    return Error(ErrorCode::INTERNAL_ERROR,
                 path_ + ": " + schema.kind + " schema version " + std::to_string(version) +
                     ", this mooncake reads version " + std::to_string(schema.version) +
                     " (a newer mooncake wrote it; run that version, or move the file away)");
  }
  return Status::Ok();
}

Status SqliteDb::Upgrade(const SqliteSchema& schema, int64_t version) {
  const int64_t from = version;
  std::string sql = "BEGIN;";
  while (version < schema.version) {
    const SqliteMigration* step = nullptr;
    for (size_t i = 0; i < schema.migration_count; ++i)
      if (schema.migrations[i].from == version) step = &schema.migrations[i];
    if (step == nullptr)
      return Error(ErrorCode::INTERNAL_ERROR,
                   path_ + ": " + schema.kind + " schema version " + std::to_string(version) +
                       " has no upgrade to version " + std::to_string(schema.version) +
                       ", which this mooncake reads");
    sql += step->sql;
    sql += ";";
    ++version;
  }
  sql += "PRAGMA user_version = " + std::to_string(schema.version) + ";COMMIT";
  Status st = Exec(sql.c_str());
  if (!st.ok()) {
    (void)Exec("ROLLBACK");
    return Error(ErrorCode::INTERNAL_ERROR,
                 path_ + ": upgrading the " + schema.kind + " schema from version " +
                     std::to_string(from) + " to " + std::to_string(schema.version) +
                     " failed (the file is unchanged): " + st.message());
  }
  MC_LOG(INFO) << path_ << ": upgraded the " << schema.kind << " schema from version " << from
               << " to " << schema.version;
  return Status::Ok();
}

// Only bytes past the end of the file are written, never over it.
// SQLite appends commits to a new WAL until its first checkpoint (1000
// pages, about 4 MiB) and overwrites it from the start after each one. On
// ext4 an fdatasync after an append also commits the file's new size to
// the filesystem journal, and took 1.7 times as long as one after an
// overwrite on our VM; so a file just opened, whose WAL is new, paid that
// on each of its first ~1000 commits. Zeros are never taken for
// frames: recovery stops at the first frame whose salt and checksum do not
// follow from the header, which is also how SQLite leaves the stale frames
// behind a restarted WAL. Written, not fallocated: a write into an
// unwritten extent changes the extent tree, an append by another name.
Status SqliteDb::PresizeWal(uint64_t bytes) {
  const std::string wal = path_ + "-wal";
  const int fd = ::open(wal.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return Error(ErrorCode::INTERNAL_ERROR, "cannot open " + wal + ": " + std::strerror(errno));
  }
  struct stat st;
  Status result;
  if (::fstat(fd, &st) != 0) {
    result = Error(ErrorCode::INTERNAL_ERROR, "fstat " + wal + ": " + std::strerror(errno));
  } else if (static_cast<uint64_t>(st.st_size) < bytes) {
    static const std::string zeros(1 << 20, '\0');
    for (uint64_t off = static_cast<uint64_t>(st.st_size); off < bytes && result.ok();) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(zeros.size(), bytes - off));
      const ssize_t w = ::pwrite(fd, zeros.data(), n, static_cast<off_t>(off));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        result = Error(ErrorCode::INTERNAL_ERROR,
                       "extending " + wal + ": " + std::strerror(w < 0 ? errno : EIO));
      } else {
        off += static_cast<uint64_t>(w);
      }
    }
    if (result.ok() && ::fdatasync(fd) != 0) {
      result = Error(ErrorCode::INTERNAL_ERROR, "fdatasync " + wal + ": " + std::strerror(errno));
    }
  }
  ::close(fd);
  return result;
}

Status SqliteDb::RelaxSynchronous() { return Exec("PRAGMA synchronous=NORMAL"); }

Status SqliteDb::SyncWal() {
  const std::string wal = path_ + "-wal";
  struct stat now;
  if (::stat(wal.c_str(), &now) != 0) {
    return Error(ErrorCode::INTERNAL_ERROR, "stat " + wal + ": " + std::strerror(errno));
  }
  struct stat held;
  if (wal_fd_ >= 0 && (::fstat(wal_fd_, &held) != 0 || held.st_ino != now.st_ino ||
                       held.st_dev != now.st_dev)) {
    // Not expected while the connection is open (see the header); syncing
    // the old file would silently sync nothing that matters.
    MC_LOG(WARN) << wal << " was replaced while open; syncing the new file";
    ::close(wal_fd_);
    wal_fd_ = -1;
  }
  if (wal_fd_ < 0) {
    wal_fd_ = ::open(wal.c_str(), O_WRONLY | O_CLOEXEC);
    if (wal_fd_ < 0) {
      return Error(ErrorCode::INTERNAL_ERROR, "cannot open " + wal + ": " + std::strerror(errno));
    }
  }
  if (::fdatasync(wal_fd_) != 0) {
    return Error(ErrorCode::INTERNAL_ERROR, "fdatasync " + wal + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Status SqliteDb::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    return Error(ErrorCode::INTERNAL_ERROR, path_ + ": " + sql + ": " + msg);
  }
  return Status::Ok();
}

Status SqliteDb::Prepare(const char* sql, sqlite3_stmt** stmt) {
  if (sqlite3_prepare_v2(db_, sql, -1, stmt, nullptr) != SQLITE_OK) {
    return Failure(std::string("preparing '") + sql + "' on " + path_);
  }
  return Status::Ok();
}

Status SqliteDb::Step(sqlite3_stmt* stmt, const std::string& what) {
  int rc = sqlite3_step(stmt);
  Status st = rc == SQLITE_DONE ? Status::Ok() : Failure(what);
  sqlite3_reset(stmt);
  sqlite3_clear_bindings(stmt);
  return st;
}

Status SqliteDb::Failure(const std::string& what) const {
  return Error(ErrorCode::INTERNAL_ERROR, what + ": " + sqlite3_errmsg(db_));
}

std::string SqliteDb::Column(sqlite3_stmt* stmt, int i) {
  const void* p = sqlite3_column_blob(stmt, i);
  int n = sqlite3_column_bytes(stmt, i);
  return p ? std::string(static_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
}

Result<int64_t> SqliteDb::QueryInt(const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  MC_RETURN_IF_ERROR(Prepare(sql, &stmt));
  int rc = sqlite3_step(stmt);
  int64_t v = rc == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : 0;
  sqlite3_finalize(stmt);
  if (rc != SQLITE_ROW) return Failure(path_ + ": " + sql);
  return v;
}

Status SqliteDb::ExpectText(const char* sql, const std::string& expected) {
  sqlite3_stmt* stmt = nullptr;
  MC_RETURN_IF_ERROR(Prepare(sql, &stmt));
  std::string got;
  if (sqlite3_step(stmt) == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(stmt, 0);
    got = t ? reinterpret_cast<const char*>(t) : "";
  }
  sqlite3_finalize(stmt);
  if (got != expected) {
    return Error(ErrorCode::INTERNAL_ERROR,
                 path_ + ": " + sql + " gave '" + got + "', expected '" + expected + "'");
  }
  return Status::Ok();
}

}  // namespace mc::storage

// SqliteDb: one SQLite database file owned by one mooncake process, opened
// the way every durable part of mooncake wants it: journal_mode=WAL,
// synchronous=FULL (a commit fsyncs the WAL before it returns, so what was
// committed survives kill -9 and, on a disk that honours fsync, power loss),
// locking_mode=EXCLUSIVE (a second process on the same file is refused at
// open). The schema is versioned with PRAGMA user_version and, for formats
// that claim one, PRAGMA application_id, so a file of another program or of
// a newer mooncake is refused with a message naming the file and the
// problem instead of being misread.
//
// Used by the metadata server (sqlite_durability) and the master's journal.
// Not thread-safe: one thread uses a SqliteDb at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace mc::storage {

// Upgrades a file of schema version `from` to version `from + 1`.
struct SqliteMigration {
  int from = 0;
  const char* sql = "";
};

struct SqliteSchema {
  const char* kind = "";           // what the file holds, for messages
  int version = 1;                 // PRAGMA user_version this code reads and writes
  uint32_t application_id = 0;     // PRAGMA application_id; 0: none claimed or checked
  const char* create_sql = "";     // creates the tables in an empty file
  // A file of an older version is upgraded at open, in place, in one
  // transaction, through these steps (in any order); a version with no
  // step from it is refused.
  const SqliteMigration* migrations = nullptr;
  size_t migration_count = 0;
};

class SqliteDb {
 public:
  // Opens (creating if needed) `path` and checks, creates or upgrades the
  // schema. INTERNAL_ERROR naming the file: unreadable, not a database,
  // another program's database, a newer schema version (or an older one
  // with no upgrade), a failed upgrade, or in use by another process.
  static Result<std::unique_ptr<SqliteDb>> Open(const std::string& path,
                                                const SqliteSchema& schema);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // Extends the WAL (path + "-wal", which Open creates) with zeros to
  // `bytes`, so that commits overwrite blocks the file already has.
  Status PresizeWal(uint64_t bytes);
  // PRAGMA synchronous=NORMAL: a commit writes its WAL frames (into the
  // kernel's page cache: they survive kill -9 of the process) without
  // fsyncing them; checkpoints still sync. SyncWal makes them durable.
  Status RelaxSynchronous();
  // fdatasync of the WAL through a descriptor this object keeps (opened on
  // first use). SQLite keeps the WAL file while the connection is open and
  // restarts it in place after a checkpoint; should its inode ever change,
  // the new file is opened and synced, and a warning logged.
  Status SyncWal();
  Status Exec(const char* sql);
  Status Prepare(const char* sql, sqlite3_stmt** stmt);
  // Runs a prepared write to completion, then resets it and clears bindings.
  Status Step(sqlite3_stmt* stmt, const std::string& what);
  // INTERNAL_ERROR "<what>: <sqlite's message>".
  Status Failure(const std::string& what) const;
  // A blob column as bytes (zero-length blobs come back as NULL pointers).
  static std::string Column(sqlite3_stmt* stmt, int i);

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }

 private:
  SqliteDb(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  Status Init(const SqliteSchema& schema);
  Status CheckSchema(const SqliteSchema& schema);
  Status Upgrade(const SqliteSchema& schema, int64_t version);
  Result<int64_t> QueryInt(const char* sql);
  Status ExpectText(const char* sql, const std::string& expected);

  const std::string path_;
  sqlite3* db_;
  int wal_fd_ = -1;  // SyncWal's descriptor on path_ + "-wal"
};

}  // namespace mc::storage

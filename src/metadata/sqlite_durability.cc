#include "metadata/sqlite_durability.h"

#include <sqlite3.h>

#include <cassert>

namespace mc::metadata {

namespace {

constexpr int kSchemaVersion = 1;
// How long a statement waits for a lock held by another connection before
// failing; with locking_mode=EXCLUSIVE this only matters at open.
constexpr int kBusyTimeoutMs = 1000;

class SqliteDurability : public Durability {
 public:
  SqliteDurability(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  ~SqliteDurability() override {
    sqlite3_finalize(put_);
    sqlite3_finalize(delete_);
    sqlite3_close(db_);
  }

  Status Init() {
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
    MC_RETURN_IF_ERROR(Exec("PRAGMA locking_mode=EXCLUSIVE"));
    // WAL must be chosen before the exclusive lock is taken by a write.
    MC_RETURN_IF_ERROR(ExpectText("PRAGMA journal_mode=WAL", "wal"));
    MC_RETURN_IF_ERROR(Exec("PRAGMA synchronous=FULL"));
    // Takes and keeps the file lock now, so a second server fails at start.
    MC_RETURN_IF_ERROR(Exec("BEGIN EXCLUSIVE; COMMIT"));
    MC_RETURN_IF_ERROR(CheckSchema());
    MC_RETURN_IF_ERROR(Prepare("INSERT OR REPLACE INTO kv(key, value) VALUES(?1, ?2)", &put_));
    MC_RETURN_IF_ERROR(Prepare("DELETE FROM kv WHERE key = ?1", &delete_));
    return Status::Ok();
  }

  Status LoadAll(std::map<std::string, std::string>* out) override {
    sqlite3_stmt* stmt = nullptr;
    MC_RETURN_IF_ERROR(Prepare("SELECT key, value FROM kv", &stmt));
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      out->insert_or_assign(Column(stmt, 0), Column(stmt, 1));
    }
    sqlite3_finalize(stmt);
    if (rc != SQLITE_DONE) return Failure("reading " + path_);
    return Status::Ok();
  }

  Status Put(const std::string& key, const std::string& value) override {
    sqlite3_bind_blob(put_, 1, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
    sqlite3_bind_blob(put_, 2, value.data(), static_cast<int>(value.size()), SQLITE_STATIC);
    return Step(put_, "writing to " + path_);
  }

  Status Delete(const std::string& key) override {
    sqlite3_bind_blob(delete_, 1, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
    return Step(delete_, "deleting from " + path_);
  }

 private:
  // A blob column as bytes; zero-length blobs come back as NULL pointers.
  static std::string Column(sqlite3_stmt* stmt, int i) {
    const void* p = sqlite3_column_blob(stmt, i);
    int n = sqlite3_column_bytes(stmt, i);
    return p ? std::string(static_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
  }

  Status Failure(const std::string& what) const {
    return Error(ErrorCode::INTERNAL_ERROR, what + ": " + sqlite3_errmsg(db_));
  }

  Status Exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : sqlite3_errmsg(db_);
      sqlite3_free(err);
      return Error(ErrorCode::INTERNAL_ERROR, path_ + ": " + sql + ": " + msg);
    }
    return Status::Ok();
  }

  Status ExpectText(const char* sql, const std::string& expected) {
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

  Status CheckSchema() {
    sqlite3_stmt* stmt = nullptr;
    MC_RETURN_IF_ERROR(Prepare("PRAGMA user_version", &stmt));
    int version = sqlite3_step(stmt) == SQLITE_ROW ? sqlite3_column_int(stmt, 0) : -1;
    sqlite3_finalize(stmt);
    if (version == 0) {
      return Exec(
          "BEGIN;"
          "CREATE TABLE IF NOT EXISTS kv (key BLOB PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;"
          "PRAGMA user_version = 1;"
          "COMMIT");
    }
    if (version != kSchemaVersion) {
      return Error(ErrorCode::INTERNAL_ERROR,
                   path_ + ": unknown schema version " + std::to_string(version) +
                       " (this mooncake knows version " + std::to_string(kSchemaVersion) + ")");
    }
    return Status::Ok();
  }

  Status Prepare(const char* sql, sqlite3_stmt** stmt) {
    if (sqlite3_prepare_v2(db_, sql, -1, stmt, nullptr) != SQLITE_OK) {
      return Failure(std::string("preparing '") + sql + "' on " + path_);
    }
    return Status::Ok();
  }

  // Runs a prepared write (its own autocommit transaction, fsynced by
  // synchronous=FULL before sqlite3_step returns).
  Status Step(sqlite3_stmt* stmt, const std::string& what) {
    int rc = sqlite3_step(stmt);
    Status st = rc == SQLITE_DONE ? Status::Ok() : Failure(what);
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    return st;
  }

  const std::string path_;
  sqlite3* db_;
  sqlite3_stmt* put_ = nullptr;
  sqlite3_stmt* delete_ = nullptr;
};

}  // namespace

Result<std::unique_ptr<Durability>> OpenSqliteDurability(const std::string& path) {
  assert(!path.empty());
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return Error(ErrorCode::INTERNAL_ERROR, "cannot open database " + path + ": " + msg);
  }
  auto durability = std::make_unique<SqliteDurability>(path, db);
  if (Status st = durability->Init(); !st.ok()) {
    int code = sqlite3_errcode(db);
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED) {
      return Error(ErrorCode::INTERNAL_ERROR,
                   "database " + path + " is in use by another process (" + st.message() + ")");
    }
    return st;
  }
  return std::unique_ptr<Durability>(std::move(durability));
}

}  // namespace mc::metadata

#include "metadata/sqlite_durability.h"

#include <sqlite3.h>

#include "storage/sqlite_db.h"

namespace mc::metadata {

namespace {

const storage::SqliteSchema kSchema{
    .kind = "mooncake metadata server",
    .version = 1,
    .application_id = 0,  // version 1 files were written without one
    .create_sql = "CREATE TABLE IF NOT EXISTS kv (key BLOB PRIMARY KEY, value BLOB NOT NULL) "
                  "WITHOUT ROWID",
};

class SqliteDurability : public Durability {
 public:
  explicit SqliteDurability(std::unique_ptr<storage::SqliteDb> db) : db_(std::move(db)) {}
  ~SqliteDurability() override {
    sqlite3_finalize(put_);
    sqlite3_finalize(delete_);
  }

  Status Init() {
    MC_RETURN_IF_ERROR(db_->Prepare("INSERT OR REPLACE INTO kv(key, value) VALUES(?1, ?2)", &put_));
    return db_->Prepare("DELETE FROM kv WHERE key = ?1", &delete_);
  }

  Status LoadAll(std::map<std::string, std::string>* out) override {
    sqlite3_stmt* stmt = nullptr;
    MC_RETURN_IF_ERROR(db_->Prepare("SELECT key, value FROM kv", &stmt));
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      out->insert_or_assign(storage::SqliteDb::Column(stmt, 0), storage::SqliteDb::Column(stmt, 1));
    }
    sqlite3_finalize(stmt);
    if (rc != SQLITE_DONE) return db_->Failure("reading " + db_->path());
    return Status::Ok();
  }

  // Each write is its own autocommit transaction, fsynced by
  // synchronous=FULL before sqlite3_step returns.
  Status Put(const std::string& key, const std::string& value) override {
    sqlite3_bind_blob(put_, 1, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
    sqlite3_bind_blob(put_, 2, value.data(), static_cast<int>(value.size()), SQLITE_STATIC);
    return db_->Step(put_, "writing to " + db_->path());
  }

  Status Delete(const std::string& key) override {
    sqlite3_bind_blob(delete_, 1, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
    return db_->Step(delete_, "deleting from " + db_->path());
  }

 private:
  std::unique_ptr<storage::SqliteDb> db_;
  sqlite3_stmt* put_ = nullptr;
  sqlite3_stmt* delete_ = nullptr;
};

}  // namespace

Result<std::unique_ptr<Durability>> OpenSqliteDurability(const std::string& path) {
  MC_ASSIGN_OR_RETURN(std::unique_ptr<storage::SqliteDb> db, storage::SqliteDb::Open(path, kSchema));
  auto durability = std::make_unique<SqliteDurability>(std::move(db));
  MC_RETURN_IF_ERROR(durability->Init());
  return std::unique_ptr<Durability>(std::move(durability));
}

}  // namespace mc::metadata

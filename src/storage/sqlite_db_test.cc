// SqliteDb: the schema a new file gets, upgrades of an older one, files it
// refuses, statements that fail naming themselves, and data that survives
// closing and opening again.
#include "storage/sqlite_db.h"

#include <doctest/doctest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

namespace mc::storage {
namespace {

struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "mc-sqlite-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string File(const char* name) const { return path + "/" + name; }
};

constexpr uint32_t kAppId = 0x4d435431;  // "MCT1"

const SqliteMigration kSteps[] = {
    // Listed out of order on purpose: steps are found by `from`.
    {2, "ALTER TABLE kv ADD COLUMN added_at INTEGER NOT NULL DEFAULT 7"},
    {1, "CREATE TABLE notes (text TEXT)"},
};

SqliteSchema Schema(int version, const SqliteMigration* steps = nullptr, size_t n = 0) {
  SqliteSchema s;
  s.kind = "test";
  s.version = version;
  s.application_id = kAppId;
  s.create_sql = version == 1 ? "CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)"
                              : "CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT, "
                                "added_at INTEGER NOT NULL DEFAULT 7); CREATE TABLE notes (text TEXT)";
  s.migrations = steps;
  s.migration_count = n;
  return s;
}

int64_t QueryInt(SqliteDb& db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(db.Prepare(sql, &stmt).ok());
  REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
  const int64_t v = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  return v;
}

std::unique_ptr<SqliteDb> OpenOk(const std::string& path, const SqliteSchema& schema) {
  auto db = SqliteDb::Open(path, schema);
  REQUIRE_MESSAGE(db.ok(), db.status().ToString());
  return std::move(*db);
}

}  // namespace

TEST_CASE("a new file gets the schema, its version and its application id") {
  TempDir dir;
  auto db = OpenOk(dir.File("a.db"), Schema(1));
  CHECK(QueryInt(*db, "PRAGMA user_version") == 1);
  CHECK(static_cast<uint32_t>(QueryInt(*db, "PRAGMA application_id")) == kAppId);
  CHECK(QueryInt(*db, "SELECT count(*) FROM kv") == 0);
}

TEST_CASE("a reopened database keeps what was committed") {
  TempDir dir;
  const std::string path = dir.File("a.db");
  {
    auto db = OpenOk(path, Schema(1));
    REQUIRE(db->Exec("INSERT INTO kv VALUES ('a', 'one'), ('b', 'two')").ok());
  }
  auto db = OpenOk(path, Schema(1));
  CHECK(QueryInt(*db, "SELECT count(*) FROM kv") == 2);
}

TEST_CASE("an older file is upgraded in place, step by step, keeping its rows") {
  TempDir dir;
  const std::string path = dir.File("a.db");
  {
    auto db = OpenOk(path, Schema(1));
    REQUIRE(db->Exec("INSERT INTO kv VALUES ('a', 'one')").ok());
  }
  {
    auto db = OpenOk(path, Schema(3, kSteps, 2));
    CHECK(QueryInt(*db, "PRAGMA user_version") == 3);
    CHECK(QueryInt(*db, "SELECT added_at FROM kv WHERE k = 'a'") == 7);
    CHECK(QueryInt(*db, "SELECT count(*) FROM notes") == 0);
  }
  auto again = OpenOk(path, Schema(3, kSteps, 2));  // nothing left to upgrade
  CHECK(QueryInt(*again, "SELECT count(*) FROM kv") == 1);
}

TEST_CASE("an older file with no upgrade step is refused naming the file and the version") {
  TempDir dir;
  const std::string path = dir.File("a.db");
  { OpenOk(path, Schema(1)); }
  auto db = SqliteDb::Open(path, Schema(3, kSteps, 1));  // only 2 -> 3
  REQUIRE_FALSE(db.ok());
  CHECK(db.code() == ErrorCode::INTERNAL_ERROR);
  CHECK(db.status().message().find(path) != std::string::npos);
  CHECK(db.status().message().find("version 1 has no upgrade") != std::string::npos);
}

TEST_CASE("a failed upgrade leaves the file as it was") {
  TempDir dir;
  const std::string path = dir.File("a.db");
  {
    auto db = OpenOk(path, Schema(1));
    REQUIRE(db->Exec("INSERT INTO kv VALUES ('a', 'one')").ok());
  }
  const SqliteMigration broken[] = {{1, "CREATE TABLE notes (text TEXT)"},
                                    {2, "ALTER TABLE missing ADD COLUMN x INTEGER"}};
  auto failed = SqliteDb::Open(path, Schema(3, broken, 2));
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().message().find("the file is unchanged") != std::string::npos);
  CHECK(failed.status().message().find("missing") != std::string::npos);
  auto db = OpenOk(path, Schema(1));
  CHECK(QueryInt(*db, "PRAGMA user_version") == 1);
  CHECK(QueryInt(*db, "SELECT count(*) FROM sqlite_master WHERE name = 'notes'") == 0);
  CHECK(QueryInt(*db, "SELECT count(*) FROM kv") == 1);
}

TEST_CASE("a file of a newer schema version is refused") {
  TempDir dir;
  const std::string path = dir.File("a.db");
  { OpenOk(path, Schema(3)); }
  auto db = SqliteDb::Open(path, Schema(1));
  REQUIRE_FALSE(db.ok());
  CHECK(db.status().message().find("a newer mooncake wrote it") != std::string::npos);
}

TEST_CASE("another program's database is refused, not misread") {
  TempDir dir;
  const std::string path = dir.File("a.db");
  {
    SqliteSchema other = Schema(1);
    other.application_id = 0x12345678;
    OpenOk(path, other);
  }
  auto db = SqliteDb::Open(path, Schema(1));
  REQUIRE_FALSE(db.ok());
  CHECK(db.status().message().find("not a test database") != std::string::npos);
  CHECK(db.status().message().find("0x12345678") != std::string::npos);
}

TEST_CASE("a failed statement returns an error naming the statement") {
  TempDir dir;
  auto db = OpenOk(dir.File("a.db"), Schema(1));
  Status exec = db->Exec("INSERT INTO nowhere VALUES (1)");
  CHECK(exec.code() == ErrorCode::INTERNAL_ERROR);
  CHECK(exec.message().find("INSERT INTO nowhere") != std::string::npos);
  CHECK(exec.message().find("no such table") != std::string::npos);

  sqlite3_stmt* stmt = nullptr;
  Status prep = db->Prepare("SELEKT 1", &stmt);
  CHECK(prep.message().find("preparing 'SELEKT 1'") != std::string::npos);

  REQUIRE(db->Prepare("INSERT INTO kv VALUES (?, 'v')", &stmt).ok());
  sqlite3_bind_text(stmt, 1, "same", -1, SQLITE_STATIC);
  REQUIRE(db->Step(stmt, "inserting key same").ok());
  sqlite3_bind_text(stmt, 1, "same", -1, SQLITE_STATIC);
  Status step = db->Step(stmt, "inserting key same");
  sqlite3_finalize(stmt);
  CHECK(step.code() == ErrorCode::INTERNAL_ERROR);
  CHECK(step.message().find("inserting key same") != std::string::npos);
  CHECK(step.message().find("UNIQUE") != std::string::npos);
}

}  // namespace mc::storage

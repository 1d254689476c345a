// SQLite-backed Durability for the metadata server (`--db FILE`).
//
// On-disk format: one SQLite 3 database, `PRAGMA user_version = 1`, one table
//   CREATE TABLE kv (key BLOB PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID
// holding every stored pair as raw bytes. journal_mode=WAL, synchronous=FULL:
// each PUT or DELETE is its own transaction whose commit fsyncs the WAL before
// the server answers 200, so an acknowledged write survives both a crash of
// the process (kill -9) and a power loss on a disk that honours fsync.
// locking_mode=EXCLUSIVE: one server per file; a second one is refused.
// Not thread-safe: KvStore calls it under its writer lock.
#pragma once

#include <memory>
#include <string>

#include "metadata/kv_store.h"

namespace mc::metadata {

// Opens (creating if needed) the database at `path`. Errors name the file and
// what SQLite said (INTERNAL_ERROR), or that another process holds it.
Result<std::unique_ptr<Durability>> OpenSqliteDurability(const std::string& path);

}  // namespace mc::metadata

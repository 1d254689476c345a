// Test helpers for the masterd unit tests that open a journal or an HA log.
#pragma once

#include <doctest/doctest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "eviction/policy.h"
#include "master/master_state.h"
#include "master/master_test_util.h"
#include "masterd/journal.h"

namespace mc::masterd::testing {

inline constexpr uint64_t kMiB = 1ull << 20;
inline constexpr uint64_t kNow = 1000000;

// A fresh file name under /tmp, removed (with its WAL) at scope exit.
struct TempDb {
  std::string path;
  TempDb() {
    char tmpl[] = "/tmp/mc-journal-test-XXXXXX";
    int fd = ::mkstemp(tmpl);
    REQUIRE(fd >= 0);
    ::close(fd);
    path = tmpl;
    std::remove(path.c_str());
  }
  ~TempDb() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  }
};

// Everything durable about a state, comparable.
inline std::string Fingerprint(const master::MasterState& s) {
  std::string out;
  for (const auto& seg : s.DumpSegments())
    out += "seg " + seg.desc.name + " " + std::to_string(seg.desc.incarnation) + " " +
           seg.desc.access_key + " " + seg.owner.ToString() + "\n";
  for (const auto& o : s.DumpObjects(true)) {
    out += "obj " + o.key + " " + std::to_string(o.size_bytes) + (o.soft_pin ? " pin" : "");
    for (const auto& r : o.replicas)
      for (const auto& b : r)
        out += " " + b.segment_name + "@" + std::to_string(b.offset) + "+" +
               std::to_string(b.size_bytes);
    out += "\n";
  }
  return out;
}

inline master::Options SmallStripes() {
  master::Options c;
  c.stripe_size_bytes = uint64_t{1} << 20;  // so large objects have several buffers
  return c;
}

inline std::unique_ptr<master::MasterState> NewState(const master::Options& c,
                                                     master::StateListener* l) {
  return std::make_unique<master::MasterState>(c, master::MakeEvictionPolicy("lru", 0), l);
}

// Opens the file with a fresh journal and state, loads it, and returns the
// state's fingerprint.
inline std::string ReloadedFingerprint(const std::string& path, const master::Options& config) {
  auto journal = masterd::Journal::Open(path, config.stripe_size_bytes);
  REQUIRE(journal.ok());
  auto state = NewState(config, journal->get());
  REQUIRE((*journal)->LoadInto(*state, /*now_us=*/1000000).ok());
  return Fingerprint(*state);
}

// FNV-1a over a row's fields, as mooncake before the word-wise check wrote
// row_check (integers as 8 little-endian bytes, text and blobs as their
// length then their bytes), written here on its own so the old format is
// pinned by this test, not by the code under test. As an SQL function:
// fnv_row(column, ...).
inline void FnvRow(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto byte = [&](unsigned char c) { h = (h ^ c) * 0x100000001b3ull; };
  auto u64 = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) byte(static_cast<unsigned char>(v >> (8 * i)));
  };
  for (int i = 0; i < argc; ++i) {
    if (sqlite3_value_type(argv[i]) == SQLITE_INTEGER) {
      u64(static_cast<uint64_t>(sqlite3_value_int64(argv[i])));
    } else {
      const auto* p = static_cast<const unsigned char*>(sqlite3_value_blob(argv[i]));
      const int n = sqlite3_value_bytes(argv[i]);
      u64(static_cast<uint64_t>(n));
      for (int k = 0; k < n; ++k) byte(p[k]);
    }
  }
  sqlite3_result_int64(ctx, static_cast<int64_t>(h));
}

// Runs `sql` on the file behind the journal's back, as another program (or
// damage) would; returns the number of rows it changed.
// fnv_row (FnvRow) is defined for it.
inline int ExecBehindJournal(const std::string& path, const char* sql,
                      std::vector<std::string>* first_column = nullptr) {
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &raw) == SQLITE_OK);
  REQUIRE(sqlite3_create_function(raw, "fnv_row", -1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr,
                                  FnvRow, nullptr, nullptr) == SQLITE_OK);
  auto collect = [](void* out, int, char** values, char**) {
    static_cast<std::vector<std::string>*>(out)->emplace_back(values[0] ? values[0] : "");
    return 0;
  };
  REQUIRE(sqlite3_exec(raw, sql, first_column ? +collect : nullptr, first_column, nullptr) ==
          SQLITE_OK);
  const int changed = sqlite3_changes(raw);
  sqlite3_close(raw);
  return changed;
}

// A journal at `path` (1 MiB stripes) holding segment "s" (16 MiB, client
// 1) and `objects`, written through the journal itself.
inline void WriteRows(const std::string& path, const std::vector<master::ObjectDump>& objects) {
  auto j = Journal::Open(path, kMiB);
  REQUIRE(j.ok());
  (*j)->OnSegmentMounted({master::testing::Segment("s", 16 * kMiB), master::testing::Client(1)});
  for (const master::ObjectDump& o : objects) (*j)->OnObjectCommitted(o);
  REQUIRE((*j)->WaitDurable().ok());
}

// What loading the journal at `path` into a fresh state says (the load
// must fail).
inline std::string LoadError(const std::string& path) {
  auto j = Journal::Open(path, kMiB);
  REQUIRE(j.ok());
  master::Options config;
  config.stripe_size_bytes = kMiB;
  auto state = NewState(config, j->get());
  auto loaded = (*j)->LoadInto(*state, kNow);
  REQUIRE(!loaded.ok());
  return loaded.status().message();
}

}  // namespace mc::masterd::testing

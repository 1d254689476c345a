// The journal's row checks: rows written with the word check, and files of
// older versions whose rows carry FNV-1a (journal_rows.h).
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

#include "master/master_test_util.h"
#include "masterd/journal.h"
#include "masterd/journal_test_util.h"

using namespace mc;
using namespace mc::master;
using namespace mc::master::testing;
using namespace mc::masterd::testing;

namespace {

constexpr const char* kFnvObjectRow = "fnv_row(key, size_bytes, soft_pin, replicas, buffers)";
constexpr const char* kFnvSegmentRow =
    "fnv_row(id, name, owner_hi, owner_lo, incarnation, size_bytes, hostname, endpoint,"
    " shm_path, access_key)";

// ExecBehindJournal's first value as an integer (-1: none).
int64_t ExecWithFnv(const std::string& path, const std::string& sql) {
  std::vector<std::string> first;
  ExecBehindJournal(path, sql.c_str(), &first);
  return first.empty() || first[0].empty() ? -1 : std::stoll(first[0]);
}

}  // namespace

TEST_CASE("rows checked with FNV-1a (files of older versions) load; new rows use the word check") {
  TempDb db;
  const Options config = SmallStripes();
  std::string before;
  {
    auto journal = masterd::Journal::Open(db.path, config.stripe_size_bytes);
    REQUIRE(journal.ok());
    auto state = NewState(config, journal->get());
    REQUIRE(state->MountSegment({Client(1), Segment("s0", 64 * kMiB)}, kNow).ok());
    REQUIRE(state->MountSegment({Client(2), Segment("s1", 64 * kMiB)}, kNow).ok());
    for (int i = 0; i < 20; ++i) {
      const std::string key = "key-with-a-long-shared-prefix-" + std::to_string(i);
      REQUIRE(state->PutStart({Client(1), key, (i % 3 + 1) * kMiB - 5, {2, i % 2 == 0}}, kNow).ok());
      REQUIRE(state->PutEnd({Client(1), key}, kNow).ok());
    }
    REQUIRE((*journal)->WaitDurable().ok());
    before = Fingerprint(*state);
  }
  // Rows as this version writes them: no row's check is FNV-1a's.
  const std::string fnv_objects =
      std::string("SELECT count(*) FROM objects WHERE row_check = ") + kFnvObjectRow;
  const std::string fnv_segments =
      std::string("SELECT count(*) FROM segments WHERE row_check = ") + kFnvSegmentRow;
  CHECK(ExecWithFnv(db.path, fnv_objects) == 0);
  CHECK(ExecWithFnv(db.path, fnv_segments) == 0);
  CHECK(ReloadedFingerprint(db.path, config) == before);

  // The same rows as a version 3 master wrote them load the same state
  // (the file is upgraded to version 4 in place, its rows unchanged).
  ExecWithFnv(db.path, std::string("UPDATE objects SET row_check = ") + kFnvObjectRow +
                           "; UPDATE segments SET row_check = " + kFnvSegmentRow +
                           "; PRAGMA user_version = 3");
  CHECK(ExecWithFnv(db.path, fnv_objects) == 20);
  CHECK(ExecWithFnv(db.path, fnv_segments) == 2);
  CHECK(ReloadedFingerprint(db.path, config) == before);
  CHECK(ExecWithFnv(db.path, "PRAGMA user_version") == masterd::kJournalSchemaVersion);

  // Mixed: new rows after old ones (a file an upgrade kept writing), both ways round.
  {
    auto journal = masterd::Journal::Open(db.path, config.stripe_size_bytes);
    REQUIRE(journal.ok());
    auto state = NewState(config, journal->get());
    REQUIRE((*journal)->LoadInto(*state, kNow).ok());
    for (int i = 20; i < 30; ++i) {
      const std::string key = "key-with-a-long-shared-prefix-" + std::to_string(i);
      REQUIRE(state->PutStart({Client(1), key, kMiB, {1, false}}, kNow).ok());
      REQUIRE(state->PutEnd({Client(1), key}, kNow).ok());
    }
    REQUIRE((*journal)->WaitDurable().ok());
    before = Fingerprint(*state);
  }
  CHECK(ExecWithFnv(db.path, fnv_objects) == 20);
  CHECK(ReloadedFingerprint(db.path, config) == before);
  ExecWithFnv(db.path, std::string("UPDATE objects SET row_check = ") + kFnvObjectRow +
                           " WHERE id % 2 = 0");
  CHECK(ReloadedFingerprint(db.path, config) == before);

  // Damage is found whichever function checked the row (an old row, a new one).
  for (const char* which : {"row_check = fnv_row(key, size_bytes, soft_pin, replicas, buffers)",
                            "row_check != fnv_row(key, size_bytes, soft_pin, replicas, buffers)"}) {
    CAPTURE(which);
    TempDb copy;
    {
      std::ifstream in(db.path, std::ios::binary);
      std::ofstream out(copy.path, std::ios::binary);
      out << in.rdbuf();
    }
    const int64_t id = ExecWithFnv(copy.path, std::string("SELECT min(id) FROM objects WHERE replicas = 1 AND ") + which);
    REQUIRE(id > 0);
    // Pinned <-> not: a valid value either way, so only the check can tell.
    ExecWithFnv(copy.path, "UPDATE objects SET soft_pin = 1 - soft_pin WHERE id = " + std::to_string(id));
    CHECK(LoadError(copy.path).find("checksum mismatch") != std::string::npos);
  }
}


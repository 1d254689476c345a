#include "masterd/journal.h"

#include <doctest/doctest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "eviction/policy.h"
#include "master/master_test_util.h"
#include "masterd/journal_test_util.h"

using namespace mc;
using namespace mc::master;
using namespace mc::master::testing;
using namespace mc::masterd::testing;

TEST_CASE("journal reloads segments and complete objects exactly; in-flight puts are gone") {
  TempDb db;
  const Options config = SmallStripes();
  std::string before;
  uint64_t allocated_complete = 0;
  {
    auto journal = masterd::Journal::Open(db.path, config.stripe_size_bytes);
    REQUIRE(journal.ok());
    auto state = NewState(config, journal->get());
    for (int i = 0; i < 3; ++i) {
      msg::SegmentDesc d = Segment("s" + std::to_string(i), 64 * kMiB);
      d.access_key = "key-" + std::to_string(i);
      d.incarnation = 100 + i;
      REQUIRE(state->MountSegment({Client(i + 1), d}, kNow).ok());
    }
    std::mt19937_64 rng(7);
    for (int i = 0; i < 60; ++i) {
      const std::string key = "k" + std::to_string(i);
      const uint64_t size = 1 + rng() % (3 * kMiB);
      REQUIRE(state->PutStart({Client(1), key, size, {1u + i % 2, i % 5 == 0}}, kNow).ok());
      if (i % 7 != 3) REQUIRE(state->PutEnd({Client(1), key}, kNow).ok());  // else in flight
    }
    for (int i = 0; i < 60; i += 4) (void)state->Remove({"k" + std::to_string(i), true}, kNow);
    REQUIRE(state->UnmountSegment({Client(3), "s2"}, kNow).ok());  // drops replicas on s2
    REQUIRE((*journal)->WaitDurable().ok());
    CHECK((*journal)->stats().commits >= 1);
    before = Fingerprint(*state);
    for (const auto& o : state->DumpObjects(true))
      for (const auto& r : o.replicas)
        for (const auto& b : r) allocated_complete += SegmentAllocator::AlignUp(b.size_bytes);
  }
  auto journal = masterd::Journal::Open(db.path, config.stripe_size_bytes);
  REQUIRE(journal.ok());
  auto state = NewState(config, journal->get());
  auto stats = (*journal)->LoadInto(*state, kNow);
  if (!stats.ok()) MESSAGE(stats.status().message());
  REQUIRE(stats.ok());
  CHECK(stats->segments == 2);
  CHECK(Fingerprint(*state) == before);
  // Only complete objects hold space: the in-flight puts were revoked.
  CHECK(state->counters().allocated_bytes == allocated_complete);
  // The reloaded state keeps journaling: a later change survives another restart.
  REQUIRE(state->PutStart({Client(1), "after", kMiB, {1, false}}, kNow).ok());
  REQUIRE(state->PutEnd({Client(1), "after"}, kNow).ok());
  REQUIRE((*journal)->WaitDurable().ok());
  const std::string after = Fingerprint(*state);
  journal->reset();
  CHECK(ReloadedFingerprint(db.path, config) == after);
}

TEST_CASE("a store back with a new incarnation loses the old incarnation's objects") {
  TempDb db;
  const Options config = SmallStripes();
  auto journal = masterd::Journal::Open(db.path, config.stripe_size_bytes);
  REQUIRE(journal.ok());
  auto state = NewState(config, journal->get());
  REQUIRE(state->MountSegment({Client(1), Segment("s", 16 * kMiB)}, kNow).ok());
  REQUIRE(state->PutStart({Client(1), "old", kMiB, {1, false}}, kNow).ok());
  REQUIRE(state->PutEnd({Client(1), "old"}, kNow).ok());
  msg::SegmentDesc reborn = Segment("s", 16 * kMiB);
  reborn.incarnation = 2;
  REQUIRE(state->MountSegment({Client(9), reborn}, kNow).ok());
  CHECK(state->GetReplicaList({Client(1), "old"}, kNow).code() == ErrorCode::OBJECT_NOT_FOUND);
  CHECK(state->counters().allocated_bytes == 0);
  REQUIRE((*journal)->WaitDurable().ok());
  journal->reset();
  auto again = masterd::Journal::Open(db.path, config.stripe_size_bytes);
  REQUIRE(again.ok());
  auto loaded = NewState(config, again->get());
  REQUIRE((*again)->LoadInto(*loaded, kNow).ok());
  CHECK(loaded->DumpObjects(true).empty());
  REQUIRE(loaded->DumpSegments().size() == 1);
  CHECK(loaded->DumpSegments()[0].desc.incarnation == 2);
}

TEST_CASE("a foreign, damaged or newer database is refused with its name and the problem") {
  SUBCASE("another program's SQLite file") {
    TempDb db;
    ExecBehindJournal(db.path, "CREATE TABLE kv(key BLOB PRIMARY KEY, value BLOB)");
    auto j = masterd::Journal::Open(db.path, kMiB);
    REQUIRE(!j.ok());
    CHECK(j.status().message().find(db.path) != std::string::npos);
    CHECK(j.status().message().find("not a mooncake master state database") != std::string::npos);
  }
  SUBCASE("random bytes") {
    TempDb db;
    std::ofstream(db.path) << std::string(8192, 'x');
    auto j = masterd::Journal::Open(db.path, kMiB);
    REQUIRE(!j.ok());
    CHECK(j.status().message().find(db.path) != std::string::npos);
    CHECK(j.status().message().find("not a database") != std::string::npos);
  }
  SUBCASE("a newer schema version") {
    TempDb db;
    { REQUIRE(masterd::Journal::Open(db.path, kMiB).ok()); }
    ExecBehindJournal(db.path, "PRAGMA user_version = 99");
    auto j = masterd::Journal::Open(db.path, kMiB);
    REQUIRE(!j.ok());
    CHECK(j.status().message().find("schema version 99") != std::string::npos);
  }
  SUBCASE("a row changed behind the journal's back is refused by its checksum") {
    TempDb db;
    WriteRows(db.path, {{"a", kMiB, true, false, {{{"s", 0, kMiB}}}}});
    // Offset 0 -> 1 MiB: a valid, free range, so only the checksum can tell.
    const char* sql = "UPDATE objects SET buffers = x'010000000000100000000000' WHERE key = CAST('a' AS BLOB)";
    REQUIRE(ExecBehindJournal(db.path, sql) == 1);
    const std::string error = LoadError(db.path);
    CHECK(error.find(db.path) != std::string::npos);
    CHECK(error.find("object row 'a': checksum mismatch") != std::string::npos);
  }
  SUBCASE("a damaged row among many stops the load there, while rows are still being read") {
    // More rows than the load's reader hands over at once (batches of 1024),
    // so the building thread finds the damage while the reader is still at
    // work and must stop it.
    TempDb db;
    std::vector<master::ObjectDump> rows;
    for (uint64_t i = 0; i < 20000; ++i) {
      rows.push_back({"k" + std::to_string(i), 64, true, false, {{{"s", i * 64, 64}}}});
    }
    WriteRows(db.path, rows);
    const char* sql = "UPDATE objects SET size_bytes = 65 WHERE key = CAST('k5000' AS BLOB)";
    REQUIRE(ExecBehindJournal(db.path, sql) == 1);
    const std::string error = LoadError(db.path);
    CHECK(error.find("object row 'k5000': checksum mismatch") != std::string::npos);
  }
  SUBCASE("rows that overlap are refused at load, naming the row") {
    TempDb db;
    WriteRows(db.path, {{"a", kMiB, true, false, {{{"s", 0, kMiB}}}},
                        {"b", kMiB, true, false, {{{"s", 64, kMiB}}}}});
    const std::string error = LoadError(db.path);
    CHECK(error.find(db.path) != std::string::npos);
    CHECK(error.find("'b'") != std::string::npos);
    CHECK(error.find("overlaps one of 'a'") != std::string::npos);
  }
}

TEST_CASE("a reply that only reserved space waits for pending frees, not for other puts") {
  TempDb db;
  const Options config = SmallStripes();
  auto journal = masterd::Journal::Open(db.path, config.stripe_size_bytes);
  REQUIRE(journal.ok());
  masterd::Journal& j = **journal;
  auto state = NewState(config, &j);
  REQUIRE(state->MountSegment({Client(1), Segment("s", 16 * kMiB)}, kNow).ok());
  REQUIRE(state->PutStart({Client(1), "a", kMiB, {1, false}}, kNow).ok());
  REQUIRE(state->PutEnd({Client(1), "a"}, kNow).ok());
  // A round that changed something on this thread waits for that change...
  CHECK(j.RoundTicket(true) == j.appended());
  // ...a later round that changed nothing waits for nothing.
  REQUIRE(state->PutStart({Client(1), "c", kMiB, {1, false}}, kNow).ok());
  CHECK(j.RoundTicket(true) == 0);
  // Another thread commits a new object: a PutStart here need not wait for it,
  // but a round that may reveal it (not private) does.
  std::thread([&] {
    REQUIRE(state->PutStart({Client(1), "b", kMiB, {1, false}}, kNow).ok());
    REQUIRE(state->PutEnd({Client(1), "b"}, kNow).ok());
  }).join();
  CHECK(j.RoundTicket(true) == 0);
  CHECK(j.RoundTicket(false) == j.appended());
  // Another thread removes an object: its space may be handed out next, so
  // a PutStart reply must wait until that remove is durable.
  std::thread([&] { REQUIRE(state->Remove({"a", false}, kNow).ok()); }).join();
  CHECK(j.RoundTicket(true) == j.appended());
  REQUIRE(j.WaitDurable().ok());
  CHECK(j.durable() == j.appended());
}

namespace {

// Rewrites a version-2 file as the version-1 format (objects keyed by key,
// no row id), as a master of that version left it.
void DowngradeToV1(const std::string& path) {
  ExecBehindJournal(path,
                    "BEGIN;"
                    "CREATE TABLE objects_v1 ("
                    " key BLOB PRIMARY KEY, size_bytes INTEGER NOT NULL, soft_pin INTEGER NOT NULL,"
                    " replicas INTEGER NOT NULL, buffers BLOB NOT NULL, row_check INTEGER NOT NULL)"
                    " WITHOUT ROWID;"
                    "INSERT INTO objects_v1 SELECT key, size_bytes, soft_pin, replicas, buffers,"
                    " row_check FROM objects;"
                    "DROP TABLE objects;"
                    "ALTER TABLE objects_v1 RENAME TO objects;"
                    "DROP TABLE disk_replicas;"  // version 3's
                    "PRAGMA user_version = 1;"
                    "COMMIT");
}

std::vector<std::string> KeysByRow(const std::string& path) {
  std::vector<std::string> keys;
  ExecBehindJournal(path, "SELECT CAST(key AS TEXT) FROM objects ORDER BY id", &keys);
  return keys;
}

}  // namespace

TEST_CASE("objects are a log: rows in commit order, one row per object, ids never reused") {
  TempDb db;
  const Options config = SmallStripes();
  std::vector<std::string> committed;
  {
    auto journal = masterd::Journal::Open(db.path, config.stripe_size_bytes);
    REQUIRE(journal.ok());
    auto state = NewState(config, journal->get());
    REQUIRE(state->MountSegment({Client(1), Segment("s0", 64 * kMiB)}, kNow).ok());
    REQUIRE(state->MountSegment({Client(2), Segment("s1", 64 * kMiB)}, kNow).ok());
    // Keys that sort in another order than they are put, as hashed names do.
    for (int i = 0; i < 40; ++i) {
      const std::string key = std::to_string((i * 7919) % 1000) + "-h";
      REQUIRE(state->PutStart({Client(1), key, kMiB, {2, false}}, kNow).ok());
      REQUIRE(state->PutEnd({Client(1), key}, kNow).ok());
      committed.push_back(key);
    }
    // Losing a replica rewrites each object's row in place, not a second row.
    REQUIRE(state->UnmountSegment({Client(2), "s1"}, kNow).ok());
    REQUIRE(state->Remove({committed[5], false}, kNow).ok());
    REQUIRE((*journal)->WaitDurable().ok());
  }
  committed.erase(committed.begin() + 5);
  CHECK(KeysByRow(db.path) == committed);
  // After a restart new objects go after every loaded row, and removing a
  // loaded object removes its row.
  {
    auto journal = masterd::Journal::Open(db.path, config.stripe_size_bytes);
    REQUIRE(journal.ok());
    auto state = NewState(config, journal->get());
    REQUIRE((*journal)->LoadInto(*state, kNow).ok());
    REQUIRE(state->PutStart({Client(1), "0-new", kMiB, {1, false}}, kNow).ok());
    REQUIRE(state->PutEnd({Client(1), "0-new"}, kNow).ok());
    REQUIRE(state->Remove({committed[0], false}, kNow).ok());
    REQUIRE((*journal)->WaitDurable().ok());
  }
  committed.erase(committed.begin());
  committed.push_back("0-new");
  CHECK(KeysByRow(db.path) == committed);
}

TEST_CASE("a version 1 file is upgraded in place at open and loads the same state") {
  TempDb db;
  const Options config = SmallStripes();
  std::string before;
  {
    auto journal = masterd::Journal::Open(db.path, config.stripe_size_bytes);
    REQUIRE(journal.ok());
    auto state = NewState(config, journal->get());
    REQUIRE(state->MountSegment({Client(1), Segment("s", 64 * kMiB)}, kNow).ok());
    for (int i = 0; i < 30; ++i) {
      const std::string key = "k" + std::to_string(29 - i);
      REQUIRE(state->PutStart({Client(1), key, 1 + i * kMiB / 10, {1, i % 3 == 0}}, kNow).ok());
      REQUIRE(state->PutEnd({Client(1), key}, kNow).ok());
    }
    REQUIRE((*journal)->WaitDurable().ok());
    before = Fingerprint(*state);
  }
  DowngradeToV1(db.path);
  {
    auto journal = masterd::Journal::Open(db.path, config.stripe_size_bytes);
    REQUIRE(journal.ok());
    auto state = NewState(config, journal->get());
    auto stats = (*journal)->LoadInto(*state, kNow);
    REQUIRE(stats.ok());
    CHECK(stats->objects == 30);
    CHECK(Fingerprint(*state) == before);
    // The upgraded file takes new objects and removes old ones by row id.
    REQUIRE(state->Remove({"k3", false}, kNow).ok());
    REQUIRE(state->PutStart({Client(1), "k3", kMiB, {1, false}}, kNow).ok());
    REQUIRE(state->PutEnd({Client(1), "k3"}, kNow).ok());
    REQUIRE((*journal)->WaitDurable().ok());
    before = Fingerprint(*state);
  }
  std::vector<std::string> version;
  ExecBehindJournal(db.path, "PRAGMA user_version", &version);
  CHECK(version == std::vector<std::string>{std::to_string(masterd::kJournalSchemaVersion)});
  CHECK(KeysByRow(db.path).back() == "k3");
  CHECK(ReloadedFingerprint(db.path, config) == before);
}

TEST_CASE("a version 2 file gains the disk replicas table, which keeps them across a restart") {
  TempDb db;
  { REQUIRE(masterd::Journal::Open(db.path, kMiB).ok()); }
  ExecBehindJournal(db.path, "BEGIN; DROP TABLE disk_replicas; PRAGMA user_version = 2; COMMIT");
  {
    auto journal = masterd::Journal::Open(db.path, kMiB);
    REQUIRE(journal.ok());
    (*journal)->OnDiskReplica("a", "host:/ssd", 100);
    (*journal)->OnDiskReplica("b", "host:/ssd", 200);
    (*journal)->OnDiskReplicaRemoved("a");
    REQUIRE((*journal)->WaitDurable().ok());
  }
  auto journal = masterd::Journal::Open(db.path, kMiB);
  REQUIRE(journal.ok());
  std::vector<std::string> rows;
  REQUIRE((*journal)
              ->LoadDiskReplicas([&](const std::string& key, const std::string& disk, uint64_t n) {
                rows.push_back(key + "@" + disk + ":" + std::to_string(n));
              })
              .ok());
  CHECK(rows == std::vector<std::string>{"b@host:/ssd:200"});
}

TEST_CASE("a version 1 file that cannot be upgraded is left as it was") {
  TempDb db;
  { REQUIRE(masterd::Journal::Open(db.path, kMiB).ok()); }
  DowngradeToV1(db.path);
  // A table in the way of the upgrade: it fails, and rolls back whole.
  ExecBehindJournal(db.path, "CREATE TABLE objects_v2(x)");
  auto j = masterd::Journal::Open(db.path, kMiB);
  REQUIRE(!j.ok());
  CHECK(j.status().message().find(db.path) != std::string::npos);
  // Every step runs in one transaction, up to the current version.
  CHECK(j.status().message().find("from version 1 to " +
                                  std::to_string(masterd::kJournalSchemaVersion) +
                                  " failed (the file is unchanged)") != std::string::npos);
  ExecBehindJournal(db.path, "DROP TABLE objects_v2");
  CHECK(masterd::Journal::Open(db.path, kMiB).ok());
}

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(),
                                                                 static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_CASE("the WAL is extended with zeros at open, and frames before the zeros are recovered") {
  TempDb db;
  TempDb image;  // what a crash leaves: the files as they are, WAL not checkpointed
  const Options config = SmallStripes();
  std::string before;
  {
    auto journal = masterd::Journal::Open(db.path, config.stripe_size_bytes);
    REQUIRE(journal.ok());
    // Extended before the first commit, so commits overwrite.
    CHECK(ReadFile(db.path + "-wal").size() == masterd::kWalPresizeBytes);
    auto state = NewState(config, journal->get());
    REQUIRE(state->MountSegment({Client(1), Segment("s0", 64 * kMiB)}, kNow).ok());
    for (int i = 0; i < 50; ++i) {
      const std::string key = "w" + std::to_string(i);
      REQUIRE(state->PutStart({Client(1), key, kMiB / 2, {1, false}}, kNow).ok());
      REQUIRE(state->PutEnd({Client(1), key}, kNow).ok());
      REQUIRE((*journal)->WaitDurable().ok());  // one commit each: many frames
    }
    REQUIRE(state->Remove({"w7", false}, kNow).ok());
    REQUIRE((*journal)->WaitDurable().ok());
    before = Fingerprint(*state);
    // The committed state is in the WAL's frames, ahead of the zeros.
    WriteFile(image.path, ReadFile(db.path));
    std::string wal = ReadFile(db.path + "-wal");
    REQUIRE(wal.size() == masterd::kWalPresizeBytes);
    const size_t last = wal.find_last_not_of('\0');
    REQUIRE(last != std::string::npos);
    // Cut the copy after its last frame, so that the open extends it again
    // behind frames that must survive it.
    constexpr size_t kHeader = 32, kFrame = 24 + 4096;
    const size_t frames = (last + 1 - kHeader + kFrame - 1) / kFrame;
    CHECK(frames >= 50);
    wal.resize(kHeader + frames * kFrame);
    WriteFile(image.path + "-wal", wal);
  }
  auto journal = masterd::Journal::Open(image.path, config.stripe_size_bytes);
  REQUIRE(journal.ok());
  auto state = NewState(config, journal->get());
  REQUIRE((*journal)->LoadInto(*state, kNow).ok());
  CHECK(Fingerprint(*state) == before);
  CHECK(state->DumpObjects(true).size() == 49);
}

// ---- fsync modes -----------------------------------------------------------------

namespace {

constexpr uint64_t kHourUs = 3600ull * 1000000;  // an interval no test reaches
constexpr uint64_t kBoundUs = 30ull * 1000000;   // how long a test waits for the timer at most

masterd::JournalOptions Mode(masterd::FsyncMode fsync, uint64_t interval_us = kHourUs) {
  return {.fsync = fsync, .sync_interval_us = interval_us};
}

// What kill -9 of the master leaves: the files as they are now (the page
// cache's view), WAL not checkpointed.
void CopyAsKilled(const std::string& from, const std::string& to) {
  WriteFile(to, ReadFile(from));
  WriteFile(to + "-wal", ReadFile(from + "-wal"));
}

}  // namespace

TEST_CASE("fsync modes are spelled always and everysec; anything else is refused by name") {
  CHECK(*masterd::ParseFsyncMode("always") == masterd::FsyncMode::kAlways);
  CHECK(*masterd::ParseFsyncMode("everysec") == masterd::FsyncMode::kEverysec);
  auto bad = masterd::ParseFsyncMode("no");
  REQUIRE(!bad.ok());
  CHECK(bad.status().message() == "'no': unknown fsync mode (use always or everysec)");
  CHECK(std::string(masterd::FsyncModeName(masterd::FsyncMode::kEverysec)) == "everysec");
}

TEST_CASE("in both fsync modes, what was committed survives a kill and reloads exactly") {
  for (auto fsync : {masterd::FsyncMode::kAlways, masterd::FsyncMode::kEverysec}) {
    CAPTURE(masterd::FsyncModeName(fsync));
    TempDb db;
    TempDb image;
    const Options config = SmallStripes();
    std::string before;
    {
      auto journal = masterd::Journal::Open(db.path, config.stripe_size_bytes, Mode(fsync));
      REQUIRE(journal.ok());
      auto state = NewState(config, journal->get());
      REQUIRE(state->MountSegment({Client(1), Segment("s0", 64 * kMiB)}, kNow).ok());
      REQUIRE(state->MountSegment({Client(2), Segment("s1", 64 * kMiB)}, kNow).ok());
      for (int i = 0; i < 40; ++i) {
        const std::string key = "k" + std::to_string(i);
        REQUIRE(state->PutStart({Client(1), key, kMiB + 17u * i, {1u + i % 2, false}}, kNow).ok());
        REQUIRE(state->PutEnd({Client(1), key}, kNow).ok());
        if (i % 5 == 0) REQUIRE((*journal)->WaitDurable().ok());
      }
      for (int i = 0; i < 40; i += 3) REQUIRE(state->Remove({"k" + std::to_string(i), true}, kNow).ok());
      REQUIRE(state->PutStart({Client(1), "last", kMiB, {1, false}}, kNow).ok());
      REQUIRE(state->PutEnd({Client(1), "last"}, kNow).ok());  // an addition after the last free
      REQUIRE((*journal)->WaitDurable().ok());
      before = Fingerprint(*state);
      CopyAsKilled(db.path, image.path);
    }
    CHECK(ReloadedFingerprint(image.path, config) == before);
    CHECK(ReloadedFingerprint(db.path, config) == before);  // and after a clean close
  }
}

TEST_CASE("fsync always: every commit is synced before it counts") {
  TempDb db;
  auto journal = masterd::Journal::Open(db.path, kMiB, Mode(masterd::FsyncMode::kAlways));
  REQUIRE(journal.ok());
  masterd::Journal& j = **journal;
  auto state = NewState(SmallStripes(), &j);
  REQUIRE(state->MountSegment({Client(1), Segment("s", 16 * kMiB)}, kNow).ok());
  REQUIRE(state->PutStart({Client(1), "a", kMiB, {1, false}}, kNow).ok());
  REQUIRE(state->PutEnd({Client(1), "a"}, kNow).ok());
  REQUIRE(j.WaitDurable().ok());
  const masterd::Journal::Stats s = j.stats();
  CHECK(s.syncs == s.commits);
  CHECK(s.synced_changes == s.changes);
  CHECK(s.changes == 2);
}

TEST_CASE("fsync everysec: additions are not synced before they count, a free is") {
  TempDb db;
  auto journal = masterd::Journal::Open(db.path, kMiB, Mode(masterd::FsyncMode::kEverysec));
  REQUIRE(journal.ok());
  masterd::Journal& j = **journal;
  auto state = NewState(SmallStripes(), &j);
  REQUIRE(state->MountSegment({Client(1), Segment("s", 16 * kMiB)}, kNow).ok());
  REQUIRE(state->MountSegment({Client(2), Segment("t", 16 * kMiB)}, kNow).ok());
  for (const char* key : {"a", "b", "c"}) {
    REQUIRE(state->PutStart({Client(1), key, kMiB, {2, false}}, kNow).ok());
    REQUIRE(state->PutEnd({Client(1), key}, kNow).ok());
  }
  REQUIRE(j.WaitDurable().ok());
  masterd::Journal::Stats s = j.stats();
  CHECK(s.changes == 5);
  CHECK(s.syncs == 0);  // mounts and puts: written, the timer will sync them
  CHECK(s.synced_changes == 0);

  // A remove frees space a PutStart may hand out next: synced by the time
  // its commit counts, and everything before it with it.
  REQUIRE(state->Remove({"a", false}, kNow).ok());
  REQUIRE(j.WaitDurable().ok());
  s = j.stats();
  CHECK(s.syncs == 1);
  CHECK(s.synced_changes == s.changes);
  CHECK(s.changes == 6);

  // So does a store leaving: its segment's unmount, and the rows of objects
  // that kept a replica elsewhere, rewritten.
  REQUIRE(state->PutStart({Client(1), "d", kMiB, {1, false}}, kNow).ok());
  REQUIRE(state->PutEnd({Client(1), "d"}, kNow).ok());
  REQUIRE(j.WaitDurable().ok());
  CHECK(j.stats().synced_changes < j.stats().changes);
  REQUIRE(state->UnmountSegment({Client(2), "t"}, kNow).ok());
  REQUIRE(j.WaitDurable().ok());
  s = j.stats();
  // The rewrites and the unmount may reach the writer in one batch or in
  // several, each of which frees and is synced.
  CHECK(s.syncs >= 2);
  CHECK(s.synced_changes == s.changes);
}

TEST_CASE("fsync everysec: the timer syncs what was committed within the interval") {
  TempDb db;
  constexpr uint64_t kShortUs = 1000;  // 1 ms, so the test waits for it, not for a second
  auto journal =
      masterd::Journal::Open(db.path, kMiB, Mode(masterd::FsyncMode::kEverysec, kShortUs));
  REQUIRE(journal.ok());
  masterd::Journal& j = **journal;
  auto state = NewState(SmallStripes(), &j);
  REQUIRE(state->MountSegment({Client(1), Segment("s", 16 * kMiB)}, kNow).ok());
  for (int i = 0; i < 3; ++i) {
    const std::string key = "k" + std::to_string(i);
    REQUIRE(state->PutStart({Client(1), key, kMiB, {1, false}}, kNow).ok());
    REQUIRE(state->PutEnd({Client(1), key}, kNow).ok());
    // Waits for the timer's sync, bounded: a missing timer fails, not hangs.
    REQUIRE(j.WaitSyncedFor(kBoundUs));
    const masterd::Journal::Stats s = j.stats();
    CHECK(s.synced_changes == s.changes);
    CHECK(s.syncs >= 1);
    CHECK(s.syncs <= s.commits);  // one per unsynced stretch, never more
  }
}

TEST_CASE("fsync everysec: the WAL keeps its file across checkpoints, so its descriptor syncs it") {
  TempDb db;
  auto journal = masterd::Journal::Open(db.path, kMiB, Mode(masterd::FsyncMode::kEverysec));
  REQUIRE(journal.ok());
  masterd::Journal& j = **journal;
  auto state = NewState(SmallStripes(), &j);
  struct stat at_open {};
  REQUIRE(::stat((db.path + "-wal").c_str(), &at_open) == 0);
  REQUIRE(state->MountSegment({Client(1), Segment("s", 1ull << 40)}, kNow).ok());
  // Well past SQLite's automatic checkpoint (1000 pages) several times, each
  // round ending with a free so that the journal's own fdatasync runs.
  for (int round = 0; round < 30; ++round) {
    for (int i = 0; i < 500; ++i) {
      const std::string key = "r" + std::to_string(round) + "/" + std::to_string(i) +
                              std::string(1000, 'x');  // 15 MB of rows in all
      REQUIRE(state->PutStart({Client(1), key, 4096, {1, false}}, kNow).ok());
      REQUIRE(state->PutEnd({Client(1), key}, kNow).ok());
    }
    REQUIRE(state->Remove({"r" + std::to_string(round) + "/0" + std::string(1000, 'x'), false},
                          kNow).ok());
    REQUIRE(j.WaitDurable().ok());
  }
  const masterd::Journal::Stats s = j.stats();
  CHECK(s.syncs == 30);
  CHECK(s.synced_changes == s.changes);
  struct stat now {};
  REQUIRE(::stat((db.path + "-wal").c_str(), &now) == 0);
  CHECK(now.st_ino == at_open.st_ino);
  CHECK(now.st_dev == at_open.st_dev);
  // Checkpoints ran (only they write the main file), so the WAL restarted.
  struct stat main_file {};
  REQUIRE(::stat(db.path.c_str(), &main_file) == 0);
  CHECK(static_cast<uint64_t>(main_file.st_size) > 4 * kMiB);
}

// ---- the change sequence (Journal::AssertSequence) ---------------------------
// Every change gets the next number, the writer commits them in order and
// each once, so what is durable is a growing prefix of what was queued; on
// replay rows come back in id order, and new ids pass every loaded one.

namespace {

std::set<std::string> SegmentNames(const MasterState& state) {
  std::set<std::string> out;
  for (const auto& s : state.DumpSegments()) out.insert(s.desc.name);
  return out;
}

std::set<std::string> Keys(const MasterState& state) {
  std::set<std::string> out;
  for (const auto& o : state.DumpObjects(true)) out.insert(o.key);
  return out;
}

}  // namespace

TEST_CASE("each change gets the next number and commits once: durable grows to appended") {
  TempDb db;
  // fsync always: a commit callback runs once per commit, never for a sync alone.
  auto journal = masterd::Journal::Open(db.path, kMiB, {.fsync = masterd::FsyncMode::kAlways});
  REQUIRE(journal.ok());
  masterd::Journal& j = **journal;
  std::mutex seen_mu;
  std::vector<uint64_t> seen;  // durable() at each commit, with appended() then
  bool above_appended = false;
  j.SetCommitCallback([&] {
    std::lock_guard<std::mutex> lock(seen_mu);
    const uint64_t durable = j.durable();
    above_appended = above_appended || durable > j.appended();
    seen.push_back(durable);
  });
  auto state = NewState(SmallStripes(), &j);
  std::mutex master_lock;  // the listener is called under the master's lock
  REQUIRE(state->MountSegment({Client(1), Segment("s", 512 * kMiB)}, kNow).ok());
  CHECK(j.appended() == 1);
  constexpr int kThreads = 4, kPuts = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPuts; ++i) {
        const std::string key = "t" + std::to_string(t) + "-" + std::to_string(i);
        std::lock_guard<std::mutex> lock(master_lock);
        const uint64_t before = j.appended();
        REQUIRE(state->PutStart({Client(1), key, kMiB, {1, false}}, kNow).ok());
        CHECK(j.appended() == before);  // an in-flight put is not journaled
        REQUIRE(state->PutEnd({Client(1), key}, kNow).ok());
        CHECK(j.appended() == before + 1);
      }
    });
  }
  for (auto& t : threads) t.join();
  REQUIRE(j.WaitDurable().ok());
  const uint64_t total = 1 + kThreads * kPuts;
  CHECK(j.appended() == total);
  CHECK(j.durable() == total);
  j.SetCommitCallback(nullptr);
  const masterd::Journal::Stats stats = j.stats();
  CHECK(stats.changes == total);
  CHECK(stats.synced_changes == total);
  std::lock_guard<std::mutex> lock(seen_mu);
  CHECK(!above_appended);
  // WaitDurable can return before the last commit's callback has run.
  CHECK(seen.size() <= stats.commits);
  REQUIRE(!seen.empty());
  CHECK(seen.back() <= total);
  for (size_t i = 1; i < seen.size(); ++i) CHECK(seen[i] > seen[i - 1]);
}

TEST_CASE("after a reload a new segment and a new object never take a loaded row's id") {
  TempDb db;
  {
    auto journal = masterd::Journal::Open(db.path, kMiB);
    REQUIRE(journal.ok());
    auto state = NewState(SmallStripes(), journal->get());
    for (const char* name : {"s0", "s1", "s2"})
      REQUIRE(state->MountSegment({Client(1), Segment(name, 64 * kMiB)}, kNow).ok());
    for (const char* key : {"a", "b", "c"}) {
      REQUIRE(state->PutStart({Client(1), key, kMiB, {1, false}}, kNow).ok());
      REQUIRE(state->PutEnd({Client(1), key}, kNow).ok());
    }
    // The lowest ids go: the highest ones stay, which the next ids must pass.
    REQUIRE(state->Remove({"a", false}, kNow).ok());
    REQUIRE(state->UnmountSegment({Client(1), "s0"}, kNow).ok());
    REQUIRE((*journal)->WaitDurable().ok());
  }
  {
    auto journal = masterd::Journal::Open(db.path, kMiB);
    REQUIRE(journal.ok());
    auto state = NewState(SmallStripes(), journal->get());
    auto loaded = (*journal)->LoadInto(*state, kNow);
    REQUIRE(loaded.ok());
    CHECK(loaded->segments == 2);
    CHECK(loaded->objects == 2);
    REQUIRE(state->MountSegment({Client(1), Segment("s3", 64 * kMiB)}, kNow).ok());
    REQUIRE(state->PutStart({Client(1), "d", kMiB, {1, false}}, kNow).ok());
    REQUIRE(state->PutEnd({Client(1), "d"}, kNow).ok());
    REQUIRE((*journal)->WaitDurable().ok());
  }
  auto journal = masterd::Journal::Open(db.path, kMiB);
  REQUIRE(journal.ok());
  auto state = NewState(SmallStripes(), journal->get());
  REQUIRE((*journal)->LoadInto(*state, kNow).ok());
  CHECK(SegmentNames(*state) == std::set<std::string>{"s1", "s2", "s3"});
  CHECK(Keys(*state) == std::set<std::string>{"b", "c", "d"});
}

#include "masterd/journal.h"

#include <sqlite3.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <limits>
#include <optional>
#include <thread>

#include "common/batch_pipe.h"
#include "common/log.h"
#include "masterd/service.h"
#include "proto/byte_io.h"
#include "storage/sqlite_db.h"

namespace mc::masterd {

namespace {

// Version 2: objects are a log, keyed by a row id that grows with every
// object committed, not by key (version 1). Engines name blocks by hashes,
// and a table keyed by those puts every new object on a different page: a
// commit of n objects then wrote about n pages to the WAL (and the
// checkpoints as many back). Appended rows share the last pages; a remove
// finds its row by the id the master keeps with the object, and evictions,
// which take old objects, mostly empty old pages together.
// Version 3: disk_replicas, the objects on the stores' disk tiers (issue 31),
// by key: the disk (host identity and tier path) and the object's size.
// Version 4: new rows' row_check is taken a word at a time (WordCheck);
// older rows keep their FNV-1a check and still load.
// Upgrades: each older version has a step in kMigrations; a file of a newer
// version is refused.
#define MC_OBJECTS_COLUMNS                                                       \
  " id INTEGER PRIMARY KEY, key BLOB NOT NULL, size_bytes INTEGER NOT NULL,"   \
  " soft_pin INTEGER NOT NULL, replicas INTEGER NOT NULL, buffers BLOB NOT NULL," \
  " row_check INTEGER NOT NULL"

#define MC_DISK_REPLICAS_COLUMNS \
  " key BLOB PRIMARY KEY, disk_id TEXT NOT NULL, size_bytes INTEGER NOT NULL"

// v1 -> v2: the rows keep their values (row_check does not cover the id) and
// get ids in key order.
const storage::SqliteMigration kMigrations[] = {
    {.from = 1,
     .sql = "CREATE TABLE objects_v2 (" MC_OBJECTS_COLUMNS ");"
            "INSERT INTO objects_v2(key, size_bytes, soft_pin, replicas, buffers, row_check)"
            " SELECT key, size_bytes, soft_pin, replicas, buffers, row_check FROM objects"
            " ORDER BY key;"
            "DROP TABLE objects;"
            "ALTER TABLE objects_v2 RENAME TO objects"},
    // IF NOT EXISTS: a file a tool turned back to an older version may
    // still hold the table.
    {.from = 2,
     .sql = "CREATE TABLE IF NOT EXISTS disk_replicas (" MC_DISK_REPLICAS_COLUMNS ")"},
    // v3 -> v4: nothing moves. Rows written from version 4 on carry the
    // word check (WordCheck below), which a version 3 master would call
    // damage: the version makes it refuse the file by its version instead.
    {.from = 3, .sql = ""},
};

const storage::SqliteSchema kSchema{
    .kind = "mooncake master state",
    .version = kJournalSchemaVersion,
    .application_id = kJournalApplicationId,
    .create_sql =
        "CREATE TABLE segments ("
        " id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
        " owner_hi INTEGER NOT NULL, owner_lo INTEGER NOT NULL,"
        " incarnation INTEGER NOT NULL, size_bytes INTEGER NOT NULL,"
        " hostname TEXT NOT NULL, endpoint TEXT NOT NULL, shm_path TEXT NOT NULL,"
        " access_key BLOB NOT NULL, row_check INTEGER NOT NULL);"
        "CREATE TABLE objects (" MC_OBJECTS_COLUMNS ");"
        "CREATE TABLE disk_replicas (" MC_DISK_REPLICAS_COLUMNS ")",
    .migrations = kMigrations,
    .migration_count = std::size(kMigrations),
};
#undef MC_OBJECTS_COLUMNS
#undef MC_DISK_REPLICAS_COLUMNS

// The last change this thread queued, per journal (tests run several).
struct OwnChange {
  const void* journal = nullptr;
  uint64_t seq = 0;
  uint64_t ticketed = 0;  // `seq` when this thread last asked for a round ticket
};
thread_local OwnChange t_own;

// One buffer in objects.buffers: u32 segment id, u64 offset (little endian).
constexpr size_t kBufferRecordBytes = 12;
// A load hands rows from its reader thread to the state in batches of this
// many, with this many batches in the pipe: enough to ride out either
// side's stalls (a page fault, a B-tree page read), little enough to stay
// in cache.
constexpr size_t kLoadBatchRows = 1024;
constexpr size_t kLoadBatches = 4;

// A check over a row's fields, so a damaged row (a flipped bit in an offset
// would point at another object's bytes) is refused at load, not served.
// SQLite checks its pages' structure, not the values in them.
//
// Rows are written with WordCheck. Files of mooncake before it hold rows
// checked with FnvCheck (FNV-1a a byte at a time: a 40-byte key's row is
// ~90 dependent multiplies, an eighth of a 50M-object start's CPU), and are
// never rewritten for it: a row loads if its check is either function's.
// Two 64-bit functions instead of one let a damaged row through with odds
// of 2^-63 instead of 2^-64.
class FnvCheck {
 public:
  FnvCheck& Bytes(std::string_view b) {
    U64(b.size());
    for (unsigned char c : b) h_ = (h_ ^ c) * kPrime;
    return *this;
  }
  FnvCheck& U64(uint64_t v) {
    for (int i = 0; i < 8; ++i) h_ = (h_ ^ ((v >> (8 * i)) & 0xff)) * kPrime;
    return *this;
  }
  int64_t value() const { return static_cast<int64_t>(h_); }

 private:
  static constexpr uint64_t kPrime = 0x100000001b3ull;
  uint64_t h_ = 0xcbf29ce484222325ull;
};

// 8 bytes a step (little-endian words; a field's length first, its last
// word zero-padded). Each step, h = mix((h ^ w) * K), is one-to-one in h
// for a given word and in the word for a given h, so a change confined to
// one word of a row always changes the check, as FNV-1a's does for one byte.
class WordCheck {
 public:
  WordCheck& Bytes(std::string_view b) {
    U64(b.size());
    size_t i = 0;
    for (; i + 8 <= b.size(); i += 8) U64(LoadLe(b.data() + i, 8));
    if (i < b.size()) U64(LoadLe(b.data() + i, b.size() - i));
    return *this;
  }
  WordCheck& U64(uint64_t w) {
    h_ = (h_ ^ w) * kMul;
    h_ ^= h_ >> 32;
    return *this;
  }
  int64_t value() const {
    uint64_t h = h_ * kFinal;  // every input bit reaches the high bits too
    h ^= h >> 29;
    return static_cast<int64_t>(h);
  }

 private:
  static uint64_t LoadLe(const char* p, size_t n) {
    uint64_t w = 0;
    for (size_t i = 0; i < n; ++i) w |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
    return w;
  }
  static constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;
  static constexpr uint64_t kFinal = 0xff51afd7ed558ccdull;
  uint64_t h_ = 0x6a09e667f3bcc909ull;
};

template <typename Check>
int64_t SegmentCheckWith(uint32_t id, const master::SegmentDump& s) {
  const msg::SegmentDesc& d = s.desc;
  return Check()
      .U64(id).Bytes(d.name).U64(s.owner.hi).U64(s.owner.lo).U64(d.incarnation)
      .U64(d.size_bytes).Bytes(d.hostname).Bytes(d.endpoint).Bytes(d.shm_path)
      .Bytes(d.access_key).value();
}

template <typename Check>
int64_t ObjectCheckWith(std::string_view key, uint64_t size, bool pin, uint64_t replicas,
                        std::string_view buffers) {
  return Check().Bytes(key).U64(size).U64(pin).U64(replicas).Bytes(buffers).value();
}

// What rows are written with.
int64_t SegmentCheck(uint32_t id, const master::SegmentDump& s) {
  return SegmentCheckWith<WordCheck>(id, s);
}
int64_t ObjectCheck(std::string_view key, uint64_t size, bool pin, uint64_t replicas,
                    std::string_view buffers) {
  return ObjectCheckWith<WordCheck>(key, size, pin, replicas, buffers);
}

// What rows load with: either function. `fnv_first` is which one the last
// row matched (a file's rows are mostly of one age), updated.
bool SegmentCheckMatches(int64_t stored, uint32_t id, const master::SegmentDump& s) {
  return stored == SegmentCheckWith<WordCheck>(id, s) || stored == SegmentCheckWith<FnvCheck>(id, s);
}
bool ObjectCheckMatches(int64_t stored, std::string_view key, uint64_t size, bool pin,
                        uint64_t replicas, std::string_view buffers, bool* fnv_first) {
  auto word = [&] { return stored == ObjectCheckWith<WordCheck>(key, size, pin, replicas, buffers); };
  auto fnv = [&] { return stored == ObjectCheckWith<FnvCheck>(key, size, pin, replicas, buffers); };
  if (*fnv_first ? fnv() : word()) return true;
  if (*fnv_first ? word() : fnv()) {
    *fnv_first = !*fnv_first;
    return true;
  }
  return false;
}

int64_t AsI64(uint64_t v) { return static_cast<int64_t>(v); }
uint64_t AsU64(sqlite3_stmt* s, int col) { return static_cast<uint64_t>(sqlite3_column_int64(s, col)); }
std::string Text(sqlite3_stmt* s, int col) { return storage::SqliteDb::Column(s, col); }
// A column's bytes in place: valid until the statement steps again.
std::string_view View(sqlite3_stmt* s, int col) {
  const void* p = sqlite3_column_blob(s, col);
  const int n = sqlite3_column_bytes(s, col);
  return p == nullptr ? std::string_view() : std::string_view(static_cast<const char*>(p), static_cast<size_t>(n));
}

int64_t QueryOne(storage::SqliteDb& db, const char* sql) {
  sqlite3_stmt* s = nullptr;
  if (!db.Prepare(sql, &s).ok()) return 0;
  const int64_t v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
  sqlite3_finalize(s);
  return v;
}

// About how many rows the objects table holds, without reading them: the
// span of its ids (each a B-tree edge, O(log n)), which is exact for a log
// that nothing was removed from, bounded by the file's bytes over 16 (no
// row takes fewer). Only sizes tables, so an estimate is enough.
size_t ExpectedObjects(storage::SqliteDb& db) {
  constexpr int64_t kMinRowBytes = 16;
  const int64_t high = QueryOne(db, "SELECT max(id) FROM objects");
  const int64_t low = QueryOne(db, "SELECT min(id) FROM objects");
  if (high <= 0 || low <= 0 || high < low) return 0;
  const int64_t file_bytes =
      QueryOne(db, "PRAGMA page_count") * QueryOne(db, "PRAGMA page_size");
  return static_cast<size_t>(std::min(high - low + 1, file_bytes / kMinRowBytes));
}

void BindText(sqlite3_stmt* s, int i, const std::string& v) {
  sqlite3_bind_blob(s, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
}

}  // namespace

Result<FsyncMode> ParseFsyncMode(std::string_view text) {
  if (text == "always") return FsyncMode::kAlways;
  if (text == "everysec") return FsyncMode::kEverysec;
  return Error(ErrorCode::INVALID_PARAMS,
               "'" + std::string(text) + "': unknown fsync mode (use always or everysec)");
}

const char* FsyncModeName(FsyncMode mode) {
  return mode == FsyncMode::kAlways ? "always" : "everysec";
}

struct Journal::Change {
  enum class Kind : uint8_t {
    kMount, kUnmount, kPutObject, kRemoveObject, kPutDiskReplica, kRemoveDiskReplica
  } kind;
  // Frees space (set by Append for removes and unmounts, by
  // OnObjectCommitted for a row rewritten after the object lost replicas).
  bool frees = false;
  uint32_t segment_id = 0;
  uint64_t row = 0;     // objects.id (kPutObject, kRemoveObject)
  std::string key;      // object key (kPutObject; kRemoveObject of a row never given)
  std::string buffers;  // kPutObject: encoded buffer records
  uint64_t size_bytes = 0;
  uint32_t replicas = 0;
  bool soft_pin = false;
  master::SegmentDump segment;  // kMount
  std::string disk_id;          // kPutDiskReplica
};

struct Journal::Statements {
  sqlite3_stmt* mount = nullptr;
  sqlite3_stmt* unmount = nullptr;
  sqlite3_stmt* put = nullptr;
  sqlite3_stmt* remove = nullptr;
  sqlite3_stmt* remove_by_key = nullptr;
  sqlite3_stmt* put_disk = nullptr;
  sqlite3_stmt* remove_disk = nullptr;
  ~Statements() {
    for (sqlite3_stmt* s : {mount, unmount, put, remove, remove_by_key, put_disk, remove_disk})
      sqlite3_finalize(s);
  }
};

Result<std::unique_ptr<Journal>> Journal::Open(const std::string& path,
                                               uint64_t stripe_size_bytes,
                                               JournalOptions options) {
  MC_ASSIGN_OR_RETURN(std::unique_ptr<storage::SqliteDb> db,
                      storage::SqliteDb::Open(path, kSchema));
  // The page cache SQLite keeps: removes touch pages all over the table
  // when objects leave in another order than they came, and the default
  // 2 MiB thrashes past ~100k objects.
  MC_RETURN_IF_ERROR(db->Exec(("PRAGMA cache_size = -" + std::to_string(kJournalCacheKiB)).c_str()));
  // SqliteDb::Open's first transaction created the WAL.
  MC_RETURN_IF_ERROR(db->PresizeWal(kWalPresizeBytes));
  if (options.fsync == FsyncMode::kEverysec) MC_RETURN_IF_ERROR(db->RelaxSynchronous());
  std::unique_ptr<Journal> j(new Journal(std::move(db), stripe_size_bytes, options));
  MC_RETURN_IF_ERROR(j->Prepare());
  j->writer_ = std::thread([p = j.get()] { p->WriterLoop(); });
  return j;
}

Journal::Journal(std::unique_ptr<storage::SqliteDb> db, uint64_t stripe_size_bytes,
                 JournalOptions options)
    : db_(std::move(db)), path_(db_->path()), stripe_size_bytes_(stripe_size_bytes),
      options_(options), stmts_(std::make_unique<Statements>()) {
  assert(stripe_size_bytes_ > 0);
  assert(options_.fsync == FsyncMode::kAlways || options_.sync_interval_us > 0);
}

Journal::~Journal() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  if (writer_.joinable()) writer_.join();
}

Status Journal::Prepare() {
  MC_RETURN_IF_ERROR(db_->Prepare(
      "INSERT OR REPLACE INTO segments(id, name, owner_hi, owner_lo, incarnation, size_bytes,"
      " hostname, endpoint, shm_path, access_key, row_check)"
      " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)",
      &stmts_->mount));
  MC_RETURN_IF_ERROR(db_->Prepare("DELETE FROM segments WHERE id = ?1", &stmts_->unmount));
  MC_RETURN_IF_ERROR(db_->Prepare(
      "INSERT OR REPLACE INTO objects(id, key, size_bytes, soft_pin, replicas, buffers,"
      " row_check) VALUES(?1,?2,?3,?4,?5,?6,?7)",
      &stmts_->put));
  MC_RETURN_IF_ERROR(db_->Prepare("DELETE FROM objects WHERE id = ?1", &stmts_->remove));
  MC_RETURN_IF_ERROR(
      db_->Prepare("DELETE FROM objects WHERE key = ?1", &stmts_->remove_by_key));
  MC_RETURN_IF_ERROR(db_->Prepare(
      "INSERT OR REPLACE INTO disk_replicas(key, disk_id, size_bytes) VALUES(?1,?2,?3)",
      &stmts_->put_disk));
  return db_->Prepare("DELETE FROM disk_replicas WHERE key = ?1", &stmts_->remove_disk);
}

void Journal::OnDiskReplica(const std::string& key, const std::string& disk_id,
                            uint64_t size_bytes) {
  Change c{Change::Kind::kPutDiskReplica};
  c.key = key;
  c.disk_id = disk_id;
  c.size_bytes = size_bytes;
  Append(std::move(c));
}

void Journal::OnDiskReplicaRemoved(const std::string& key) {
  Change c{Change::Kind::kRemoveDiskReplica};
  c.key = key;
  Append(std::move(c));
}

Status Journal::LoadDiskReplicas(
    const std::function<void(const std::string&, const std::string&, uint64_t)>& fn) {
  sqlite3_stmt* s = nullptr;
  MC_RETURN_IF_ERROR(db_->Prepare("SELECT key, disk_id, size_bytes FROM disk_replicas", &s));
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) fn(Text(s, 0), Text(s, 1), AsU64(s, 2));
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE)
    return Error(ErrorCode::INTERNAL_ERROR, path_ + ": reading disk_replicas failed");
  return Status::Ok();
}

// ---- listener (under the master's lock) ---------------------------------------

void Journal::OnSegmentMounted(const master::SegmentDump& segment) {
  auto [it, inserted] = segment_ids_.try_emplace(segment.desc.name, next_segment_id_);
  if (inserted) ++next_segment_id_;
  // A mount writes its row with INSERT OR REPLACE: a new segment must get an
  // id no mounted (or loaded) segment has, or its row would replace theirs.
  assert(it->second < next_segment_id_);
  Change c{Change::Kind::kMount};
  c.segment_id = it->second;
  c.segment = segment;
  Append(std::move(c));
}

void Journal::OnSegmentUnmounted(std::string_view segment_name) {
  auto it = segment_ids_.find(segment_name);
  assert(it != segment_ids_.end());
  if (it == segment_ids_.end()) return;
  Change c{Change::Kind::kUnmount};
  c.segment_id = it->second;
  segment_ids_.erase(it);
  Append(std::move(c));
}

uint64_t Journal::OnObjectCommitted(const master::ObjectDump& object) {
  Change c{Change::Kind::kPutObject};
  // A new object appends; one that lost replicas rewrites its row, and the
  // space of the lost replicas' surviving stripes is free again.
  c.row = object.listener_tag != 0 ? object.listener_tag : next_row_++;
  // A rewrite names a row this journal gave out or loaded; a new row is past
  // all of them (INSERT OR REPLACE would otherwise overwrite another object).
  assert(c.row > 0 && c.row < next_row_);
  c.frees = object.listener_tag != 0;
  c.key = object.key;
  c.size_bytes = object.size_bytes;
  c.soft_pin = object.soft_pin;
  c.replicas = static_cast<uint32_t>(object.replicas.size());
  proto::Writer w(&c.buffers);
  for (const auto& replica : object.replicas) {
    for (const master::BufferLocation& b : replica) {
      auto seg = segment_ids_.find(b.segment_name);
      assert(seg != segment_ids_.end());  // the state mounts before it places
      w.U32(seg == segment_ids_.end() ? 0 : seg->second);
      w.U64(b.offset);
    }
  }
  const uint64_t row = c.row;
  Append(std::move(c));
  return row;
}

void Journal::OnObjectRemoved(std::string_view key, uint64_t listener_tag,
                              master::RemoveReason reason) {
  (void)reason;
  Change c{Change::Kind::kRemoveObject};
  c.row = listener_tag;
  assert(c.row != 0 && "every durable object was committed or loaded through the journal");
  assert(c.row < next_row_);
  if (c.row == 0) c.key = std::string(key);  // found by a scan, but found
  Append(std::move(c));
}

void Journal::Append(Change change) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const bool frees = change.frees || change.kind == Change::Kind::kRemoveObject ||
                       change.kind == Change::Kind::kUnmount;
    change.frees = frees;
    pending_.push_back(std::move(change));
    ++appended_;
    if (t_own.journal != this) t_own = {this, 0, 0};
    t_own.seq = appended_;
    if (frees) last_free_ = appended_;
    AssertSequence();
  }
  work_cv_.notify_one();
}

void Journal::AssertSequence() const {
  assert(synced_ <= durable_ && "only committed changes are synced");
  assert(durable_ <= appended_ && "only queued changes are committed");
  assert(last_free_ <= appended_);
  // Changes taken by the writer but not yet durable are in neither count.
  assert(pending_.size() <= appended_ - durable_ && "queued changes are the newest");
  assert(durable_seen_.load(std::memory_order_relaxed) == durable_);
}

// ---- group commit ---------------------------------------------------------------

Status Journal::WaitFor(std::unique_lock<std::mutex>& lock, uint64_t target) {
  done_cv_.wait(lock, [&] { return durable_ >= target || !failure_.ok(); });
  return failure_;
}

Status Journal::WaitDurable() {
  std::unique_lock<std::mutex> lock(mu_);
  return WaitFor(lock, appended_);
}


Status Journal::failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

bool Journal::WaitSyncedFor(uint64_t timeout_us) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = appended_;
  return done_cv_.wait_for(lock, std::chrono::microseconds(timeout_us),
                           [&] { return synced_ >= target || !failure_.ok(); }) &&
         failure_.ok();
}

Journal::Stats Journal::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {.commits = commits_,
          .changes = durable_,
          .syncs = syncs_,
          .synced_changes = synced_,
          .commit_seconds = commit_seconds_};
}

// One round: commit what has queued (if anything), then, in everysec mode,
// fdatasync the WAL: before the commit counts if its batch freed space;
// after it counts if the oldest unsynced commit is a sync interval old, or
// on the way out. `due` (writer only) is when the oldest unsynced commit
// must be synced; empty while all are.
void Journal::WriterLoop() {
  using Clock = std::chrono::steady_clock;
  const bool everysec = options_.fsync == FsyncMode::kEverysec;
  std::optional<Clock::time_point> due;
  std::vector<Change> batch;
  uint64_t taken = 0;  // changes handed to Commit so far
  for (;;) {
    uint64_t upto = 0;
    bool stopping = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto ready = [&] { return !pending_.empty() || stopping_; };
      if (due) {
        work_cv_.wait_until(lock, *due, ready);
      } else {
        work_cv_.wait(lock, ready);
      }
      if (!failure_.ok()) return;
      stopping = stopping_;
      if (pending_.empty()) {
        if (!due) return;                                // stopping, all synced
        if (!stopping && Clock::now() < *due) continue;  // woken early
      } else if (pending_.size() <= kMaxChangesPerCommit) {
        batch.swap(pending_);
      } else {
        auto cut = pending_.begin() + kMaxChangesPerCommit;
        batch.assign(std::make_move_iterator(pending_.begin()), std::make_move_iterator(cut));
        pending_.erase(pending_.begin(), cut);
      }
      upto = appended_ - pending_.size();
      // Batches are consecutive runs of the sequence: no change is skipped
      // or committed twice, so what is durable is always a prefix.
      assert(upto == taken + batch.size());
      taken = upto;
    }
    const bool committing = !batch.empty();
    bool frees = false;
    for (const Change& c : batch) frees = frees || c.frees;
    const auto started = Clock::now();
    Status st = committing ? Commit(batch) : Status::Ok();
    batch.clear();
    // A free must be on disk before it counts (see the top of journal.h);
    // always: SQLite synced the commit itself.
    const bool synced_first = everysec && st.ok() && frees;
    if (synced_first) st = db_->SyncWal();
    if (committing || !st.ok()) {
      const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
      Publish(committing, upto, synced_first || !everysec, st, seconds);
    }
    // The timer's sync runs after the commit counted, so the replies that
    // waited for it do not wait for the flush too.
    const bool synced_after = everysec && st.ok() && !synced_first && due &&
                              (stopping || !committing || Clock::now() >= *due);
    if (synced_after) Publish(false, 0, true, db_->SyncWal(), 0);
    if (synced_first || synced_after) {
      due.reset();
    } else if (everysec && committing && !due) {
      due = Clock::now() + std::chrono::microseconds(options_.sync_interval_us);
    }
  }
}

// Records a round's outcome and wakes whoever waits for it: a commit of the
// changes up to `upto` (if `committed`), the WAL synced through the last
// commit (if `synced`), or the failure that ends the journal.
void Journal::Publish(bool committed, uint64_t upto, bool synced, const Status& st,
                      double seconds) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (committed) {
      ++commits_;
      commit_seconds_ += seconds;
    }
    if (st.ok()) {
      if (committed) {
        assert(upto > durable_ && "a commit makes at least one more change durable");
        assert(upto <= appended_);
        durable_ = upto;
        durable_seen_.store(upto, std::memory_order_release);
      }
      if (synced) {
        ++syncs_;
        synced_ = durable_;
      }
    } else if (failure_.ok()) {
      failure_ = st;
      failed_.store(true, std::memory_order_release);
      MC_LOG(ERROR) << "journal commit failed: " << st.ToString();
    }
    AssertSequence();
  }
  done_cv_.notify_all();
  std::lock_guard<std::mutex> lock(callback_mu_);
  if (on_commit_) on_commit_();
}

Status Journal::Commit(const std::vector<Change>& batch) {
  MC_RETURN_IF_ERROR(db_->Exec("BEGIN"));
  const std::string what = "writing to " + path_;
  Status st;
  for (const Change& c : batch) {
    switch (c.kind) {
      case Change::Kind::kMount: {
        const msg::SegmentDesc& d = c.segment.desc;
        sqlite3_stmt* s = stmts_->mount;
        sqlite3_bind_int64(s, 1, c.segment_id);
        BindText(s, 2, d.name);
        sqlite3_bind_int64(s, 3, AsI64(c.segment.owner.hi));
        sqlite3_bind_int64(s, 4, AsI64(c.segment.owner.lo));
        sqlite3_bind_int64(s, 5, AsI64(d.incarnation));
        sqlite3_bind_int64(s, 6, AsI64(d.size_bytes));
        BindText(s, 7, d.hostname);
        BindText(s, 8, d.endpoint);
        BindText(s, 9, d.shm_path);
        BindText(s, 10, d.access_key);
        sqlite3_bind_int64(s, 11, SegmentCheck(c.segment_id, c.segment));
        st = db_->Step(s, what);
        break;
      }
      case Change::Kind::kUnmount:
        sqlite3_bind_int64(stmts_->unmount, 1, c.segment_id);
        st = db_->Step(stmts_->unmount, what);
        break;
      case Change::Kind::kPutObject:
        sqlite3_bind_int64(stmts_->put, 1, AsI64(c.row));
        BindText(stmts_->put, 2, c.key);
        sqlite3_bind_int64(stmts_->put, 3, AsI64(c.size_bytes));
        sqlite3_bind_int(stmts_->put, 4, c.soft_pin ? 1 : 0);
        sqlite3_bind_int(stmts_->put, 5, static_cast<int>(c.replicas));
        BindText(stmts_->put, 6, c.buffers);
        sqlite3_bind_int64(stmts_->put, 7,
                           ObjectCheck(c.key, c.size_bytes, c.soft_pin, c.replicas, c.buffers));
        st = db_->Step(stmts_->put, what);
        break;
      case Change::Kind::kPutDiskReplica:
        BindText(stmts_->put_disk, 1, c.key);
        BindText(stmts_->put_disk, 2, c.disk_id);
        sqlite3_bind_int64(stmts_->put_disk, 3, AsI64(c.size_bytes));
        st = db_->Step(stmts_->put_disk, what);
        break;
      case Change::Kind::kRemoveDiskReplica:
        BindText(stmts_->remove_disk, 1, c.key);
        st = db_->Step(stmts_->remove_disk, what);
        break;
      case Change::Kind::kRemoveObject:
        if (c.row != 0) {
          sqlite3_bind_int64(stmts_->remove, 1, AsI64(c.row));
          st = db_->Step(stmts_->remove, what);
        } else {
          BindText(stmts_->remove_by_key, 1, c.key);
          st = db_->Step(stmts_->remove_by_key, what);
        }
        break;
    }
    if (!st.ok()) break;
  }
  // always: fsyncs the WAL (synchronous=FULL); everysec: writes it (NORMAL)
  if (st.ok()) st = db_->Exec("COMMIT");
  if (!st.ok()) (void)db_->Exec("ROLLBACK");
  return st;
}

uint64_t Journal::appended() const {
  std::lock_guard<std::mutex> lock(mu_);
  return appended_;
}

uint64_t Journal::RoundTicket(bool private_only) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t own_this_round = 0;
  if (t_own.journal == this) {
    if (t_own.seq > t_own.ticketed) own_this_round = std::min(t_own.seq, appended_);
    t_own.ticketed = t_own.seq;
  }
  const uint64_t ticket = private_only ? std::max(own_this_round, last_free_) : appended_;
  assert(ticket <= appended_ && "a reply never waits for a change not yet queued");
  return ticket;
}

void Journal::SetCommitCallback(std::function<void()> on_commit) {
  // Waits for a callback that is running: after this returns the old one
  // is never called again.
  std::lock_guard<std::mutex> lock(callback_mu_);
  on_commit_ = std::move(on_commit);
}

JournalGate::JournalGate(Journal& journal) : journal_(journal) {}
JournalGate::~JournalGate() { journal_.SetCommitCallback(nullptr); }

uint64_t JournalGate::Ticket(uint64_t requests) {
  const bool private_only = MasterService::TakePrivateOps() == requests;
  return journal_.RoundTicket(private_only);
}

uint64_t JournalGate::Released() const { return journal_.durable(); }
bool JournalGate::Failed() const { return journal_.failed(); }

void JournalGate::Subscribe(std::function<void()> wake) {
  // One callback for every I/O thread: the server subscribes each loop
  // before any of them serves, so a vector built here is complete.
  auto wakes = std::make_shared<std::vector<std::function<void()>>>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    wakes_.push_back(std::move(wake));
    *wakes = wakes_;
  }
  journal_.SetCommitCallback([wakes] {
    for (const auto& w : *wakes) w();
  });
}

void JournalGate::Unsubscribe() {
  journal_.SetCommitCallback(nullptr);
  std::lock_guard<std::mutex> lock(mu_);
  wakes_.clear();
}

// ---- load ----------------------------------------------------------------------

Result<Journal::LoadStats> Journal::LoadInto(master::MasterState& state, uint64_t now_us) {
  LoadStats stats;
  // Each segment row's id -> the state's id of that segment: object rows
  // name segments by row id, and the state takes its own ids, so that 50M
  // objects' buffers need no name copied or looked up.
  std::map<uint32_t, uint32_t> state_ids;
  // The writer is idle until the state changes, which it cannot before the
  // load returns, so the database is used from this thread only here.
  MC_RETURN_IF_ERROR(db_->Exec("BEGIN"));
  Status st = LoadSegments(state, now_us, &stats, &state_ids);
  if (st.ok()) st = LoadObjects(state, now_us, &stats, state_ids);
  (void)db_->Exec("COMMIT");
  if (!st.ok()) return st;
  return stats;
}

Status Journal::LoadSegments(master::MasterState& state, uint64_t now_us, LoadStats* stats,
                             std::map<uint32_t, uint32_t>* state_ids) {
  sqlite3_stmt* s = nullptr;
  MC_RETURN_IF_ERROR(db_->Prepare(
      "SELECT id, name, owner_hi, owner_lo, incarnation, size_bytes, hostname, endpoint,"
      " shm_path, access_key, row_check FROM segments ORDER BY id",
      &s));
  int rc;
  Status st;
  int64_t previous_id = std::numeric_limits<int64_t>::min();
  while (st.ok() && (rc = sqlite3_step(s)) == SQLITE_ROW) {
    assert(sqlite3_column_int64(s, 0) > previous_id && "ORDER BY a primary key: ids increase");
    previous_id = sqlite3_column_int64(s, 0);
    const auto id = static_cast<uint32_t>(previous_id);
    master::SegmentDump d;
    d.desc.name = Text(s, 1);
    d.owner = msg::ClientId{AsU64(s, 2), AsU64(s, 3)};
    d.desc.incarnation = AsU64(s, 4);
    d.desc.size_bytes = AsU64(s, 5);
    d.desc.hostname = Text(s, 6);
    d.desc.endpoint = Text(s, 7);
    d.desc.shm_path = Text(s, 8);
    d.desc.access_key = Text(s, 9);
    st = SegmentCheckMatches(sqlite3_column_int64(s, 10), id, d)
             ? state.LoadSegment(d, now_us)
             : Error(ErrorCode::INTERNAL_ERROR, "checksum mismatch (the file is damaged)");
    if (!st.ok()) {
      st = Error(ErrorCode::INTERNAL_ERROR,
                 path_ + ": segment row " + std::to_string(id) + ": " + st.message());
      break;
    }
    const std::optional<uint32_t> state_id = state.SegmentIdOf(d.desc.name);
    assert(state_id.has_value() && "a segment just loaded is mounted");
    state_ids->emplace(id, *state_id);
    segment_ids_[d.desc.name] = id;
    next_segment_id_ = std::max(next_segment_id_, id + 1);
    ++stats->segments;
  }
  if (st.ok() && rc != SQLITE_DONE) st = db_->Failure(path_ + ": reading segments");
  sqlite3_finalize(s);
  return st;
}

// One objects row as the state loads it: checked against its row_check,
// its buffers decoded. `o` is reused row after row: its key and buffer
// replicas keep their capacity, so a row costs no heap block (10M rows at
// start).
Status Journal::DecodeObjectRow(sqlite3_stmt* s, const std::map<uint32_t, uint32_t>& state_ids,
                                master::ObjectDump* o, bool* fnv_first) const {
  o->key.assign(View(s, 0));
  // Hashed here, on the reader's thread, not by the state (the busier one).
  o->key_hash = std::hash<std::string_view>()(o->key);
  o->size_bytes = AsU64(s, 1);
  o->soft_pin = sqlite3_column_int(s, 2) != 0;
  o->complete = true;
  const int64_t row = sqlite3_column_int64(s, 6);
  if (row <= 0)
    return Error(ErrorCode::INTERNAL_ERROR, path_ + ": object row '" + o->key + "': id " +
                                                std::to_string(row) + " is not positive");
  // ORDER BY a primary key: ids strictly increase.
  assert(o->listener_tag < static_cast<uint64_t>(row) || o->listener_tag == 0);
  o->listener_tag = static_cast<uint64_t>(row);
  const int64_t replicas = sqlite3_column_int64(s, 3);
  const std::string_view buffers = View(s, 4);
  const size_t count = buffers.size() / kBufferRecordBytes;
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::INTERNAL_ERROR, path_ + ": object row '" + o->key + "': " + why);
  };
  if (!ObjectCheckMatches(sqlite3_column_int64(s, 5), o->key, o->size_bytes, o->soft_pin,
                          static_cast<uint64_t>(replicas), buffers, fnv_first))
    return bad("checksum mismatch (the file is damaged)");
  if (replicas <= 0 || replicas > kMaxReplicas || buffers.size() % kBufferRecordBytes != 0 ||
      count % replicas != 0 || count == 0)
    return bad("malformed buffer list (" + std::to_string(buffers.size()) + " bytes, " +
               std::to_string(replicas) + " replicas)");
  const uint64_t stripes = count / static_cast<uint64_t>(replicas);
  proto::Reader r(buffers);
  o->replicas.resize(static_cast<size_t>(replicas));
  for (auto& replica : o->replicas) {
    replica.resize(stripes);
    for (uint64_t i = 0; i < stripes; ++i) {
      const uint32_t seg = r.U32("segment id");
      const uint64_t offset = r.U64("offset");
      auto state_id = state_ids.find(seg);
      if (state_id == state_ids.end())
        return bad("segment id " + std::to_string(seg) + " is not in the segments table");
      const uint64_t size = i + 1 < stripes ? stripe_size_bytes_
                            : o->size_bytes > i * stripe_size_bytes_
                                ? o->size_bytes - i * stripe_size_bytes_
                                : 0;
      master::BufferLocation& b = replica[i];
      b.segment_id = state_id->second;  // segment_name stays empty
      b.offset = offset;
      b.size_bytes = size;
    }
  }
  return Status::Ok();
}

// Two threads share the load (a 50M-object start is minutes of CPU): this
// one builds the state (MasterState is not thread-safe), a reader steps
// SQLite and checks and decodes the rows, handing them over in batches.
// The rows reach the state in file order, as from one thread.
Status Journal::LoadObjects(master::MasterState& state, uint64_t now_us, LoadStats* stats,
                            const std::map<uint32_t, uint32_t>& state_ids) {
  sqlite3_stmt* s = nullptr;
  MC_RETURN_IF_ERROR(
      db_->Prepare("SELECT key, size_bytes, soft_pin, replicas, buffers, row_check, id"
                   " FROM objects ORDER BY id",
                   &s));
  const auto started = std::chrono::steady_clock::now();
  state.BeginBulkLoad(ExpectedObjects(*db_));
  BatchPipe<master::ObjectDump> pipe(kLoadBatches, kLoadBatchRows);
  Status read_status;
  uint64_t last_row = 0;
  std::thread reader([&] {
    int rc = SQLITE_ROW;
    bool fnv_first = false;  // which row check to try first (ObjectCheckMatches)
    while (auto* b = pipe.TakeEmpty()) {
      while (b->count < b->items.size() && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        read_status = DecodeObjectRow(s, state_ids, &b->items[b->count], &fnv_first);
        if (!read_status.ok()) break;
        last_row = b->items[b->count++].listener_tag;
      }
      pipe.PushFull(b);
      if (!read_status.ok() || rc != SQLITE_ROW) break;
    }
    if (read_status.ok() && rc != SQLITE_DONE && rc != SQLITE_ROW)
      read_status = db_->Failure(path_ + ": reading objects");
    pipe.Close();
  });
  Status st;
  while (auto* b = pipe.TakeFull()) {
    for (size_t i = 0; i < b->count && st.ok(); ++i) {
      st = state.LoadObject(b->items[i], now_us);
      if (!st.ok() && st.code() != ErrorCode::INTERNAL_ERROR)
        st = Error(ErrorCode::INTERNAL_ERROR,
                   path_ + ": object row '" + b->items[i].key + "': " + st.message());
      if (st.ok()) ++stats->objects;
    }
    pipe.GiveBack(b);
    if (!st.ok()) {
      pipe.Cancel();
      break;
    }
  }
  reader.join();
  sqlite3_finalize(s);
  if (st.ok()) st = read_status;
  // next_row_ stays past every loaded row.
  next_row_ = std::max(next_row_, last_row + 1);
  const auto built = std::chrono::steady_clock::now();
  stats->rows_us = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(built - started).count());
  if (st.ok()) {
    st = state.FinishBulkLoad();
    if (!st.ok()) st = Error(ErrorCode::INTERNAL_ERROR, path_ + ": " + st.message());
  }
  stats->build_us = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                              std::chrono::steady_clock::now() - built)
                                              .count());
  return st;
}

}  // namespace mc::masterd

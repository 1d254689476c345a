#include "masterd/journal.h"

#include <sqlite3.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <limits>
#include <optional>
#include <thread>

#include "common/log.h"
#include "masterd/journal_rows.h"
#include "masterd/service.h"
#include "proto/byte_io.h"
#include "storage/sqlite_db.h"

namespace mc::masterd {

using namespace journal_rows;

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

}  // namespace mc::masterd

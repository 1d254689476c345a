// Journal: the master's durable state in SQLite (`--data-dir DIR`, file
// DIR/master.db; tables in mooncake-master(1), FILES).
//
// A master::StateListener: the state machine reports each durable change
// (segment mounted or unmounted, object committed or removed) under the
// master's lock; Append only queues it. One writer thread commits whatever
// has queued as one transaction (group commit: while one commit fsyncs,
// the changes of every other client gather for the next), so many clients
// share each fsync. WaitDurable blocks until everything queued before the
// call is committed; the RPC server calls it before sending a round of
// replies, so a PutEnd or Remove is acknowledged only once it is durable.
//
// What "committed" means depends on the fsync mode (`[master] fsync`,
// mooncake-master(1) DURABILITY). kAlways: every commit fdatasyncs the WAL
// before it counts (SQLite's synchronous=FULL). kEverysec: a commit writes
// its WAL frames (synchronous=NORMAL: in the page cache, so it survives
// kill -9 of the master) and counts; the writer fdatasyncs the WAL within
// the sync interval. A commit holding a change that frees space (remove,
// eviction, unmount, an object's row rewritten after it lost replicas) is
// fdatasynced before it counts: a power cut then loses only additions
// (objects committed, segments mounted), never a free, so space a later
// PutStart hands out can never come back under an old object's key.
//
// In-flight puts, leases and client liveness are not journaled: after a
// restart in-flight puts are gone (revoked; their space was never
// committed), and the owners of loaded segments get a fresh client_ttl to
// ping again.
//
// Thread-safe: the StateListener calls come under the master's lock,
// WaitDurable from any thread, the writer runs on its own thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/result.h"
#include "master/master_state.h"
#include "master/state_listener.h"
#include "masterd/disk_replica_listener.h"
#include "rpc/server.h"

struct sqlite3_stmt;

namespace mc::storage {
class SqliteDb;
}

namespace mc::masterd {

// PRAGMA application_id of a master state file: "MCMS".
constexpr uint32_t kJournalApplicationId = 0x4d434d53;
constexpr int kJournalSchemaVersion = 4;
// Changes written in one transaction at most; more wait for the next one.
constexpr size_t kMaxChangesPerCommit = 1u << 16;
// SQLite page cache of the journal's connection: a fixed cost, not one that
// grows with the objects (64 MiB was 6.7 bytes an object at 10 million).
// Appends touch only the table's last pages; a remove past the cache
// reads its page from the kernel's page cache.
constexpr uint64_t kJournalCacheKiB = 8 * 1024;
// The WAL is extended with zeros to this size at open (see SqliteDb::PresizeWal):
// SQLite's automatic checkpoint every 1000 pages keeps it near 4 MiB, and a
// commit that crosses that mark runs past it by its own pages.
constexpr uint64_t kWalPresizeBytes = 8ull << 20;

// How a commit is made durable; see the top of this file.
enum class FsyncMode : uint8_t { kAlways, kEverysec };
// The most an everysec commit waits for its fdatasync (Redis's "everysec").
constexpr uint64_t kEverysecSyncIntervalUs = 1000000;

// "always" or "everysec", as `[master] fsync` spells them.
Result<FsyncMode> ParseFsyncMode(std::string_view text);
const char* FsyncModeName(FsyncMode mode);

struct JournalOptions {
  FsyncMode fsync = FsyncMode::kEverysec;
  uint64_t sync_interval_us = kEverysecSyncIntervalUs;  // everysec; tests shorten it
};

class Journal final : public master::StateListener, public DiskReplicaListener {
 public:
  // Opens or creates `path` and starts the writer thread. `stripe_size_bytes`
  // must be the master's: buffer sizes are derived from it, not stored.
  static Result<std::unique_ptr<Journal>> Open(const std::string& path,
                                               uint64_t stripe_size_bytes,
                                               JournalOptions options = {});
  ~Journal() override;  // commits what is queued, stops the writer

  struct LoadStats {
    uint64_t segments = 0;
    uint64_t objects = 0;
    uint64_t rows_us = 0;   // reading the rows into the state (two threads)
    uint64_t build_us = 0;  // building the index and the used lists (FinishBulkLoad)
  };
  // Rebuilds a fresh `state` from the file. A row that does not decode, or
  // that the state refuses (overlap, unknown segment, ...), fails the load
  // with a message naming the file and the row: the master then refuses to
  // start rather than serve wrong data.
  Result<LoadStats> LoadInto(master::MasterState& state, uint64_t now_us);

  // Blocks until every change queued before the call is committed; the
  // commit's error if one failed (the journal then stays failed).
  Status WaitDurable();
  // Up to `timeout_us`, waits until every change queued before the call is
  // committed and fdatasynced (everysec: by the timer at the latest); false
  // on timeout or failure. For tests and tools.
  bool WaitSyncedFor(uint64_t timeout_us);
  // Non-blocking forms for the RPC server's ReplyGate: sequence numbers of
  // changes (queued so far; what a reply that reveals nothing durable must
  // wait for; committed so far), and a callback run on the writer thread
  // after every commit (null: none).
  uint64_t appended() const;
  // What the replies of the round of requests this thread just handled
  // wait for. Any round that may reveal other clients' changes: every change
  // queued so far. A `private_only` round (only PutStart, PutRevoke, Ping):
  // the changes this thread made during the round (evictions for its
  // PutStarts) and the last change by anyone that freed space, since space
  // a PutStart hands out may be what a not yet durable Remove freed, and a
  // client must not write over an object a crash would bring back.
  uint64_t RoundTicket(bool private_only);
  uint64_t durable() const { return durable_seen_.load(std::memory_order_acquire); }
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  void SetCommitCallback(std::function<void()> on_commit);
  Status failure() const;
  // What the master's /metrics exports of the journal.
  struct Stats {
    uint64_t commits = 0;         // transactions committed
    uint64_t changes = 0;         // changes in them
    // fdatasyncs of the WAL: one per commit (always); one per commit that
    // freed space, and one per timer expiry after unsynced commits (everysec)
    uint64_t syncs = 0;
    uint64_t synced_changes = 0;  // changes committed and fdatasynced
    double commit_seconds = 0;    // time spent committing (SQLite's writes, and fdatasyncs before a reply)
  };
  Stats stats() const;
  const std::string& path() const { return path_; }

  // master::StateListener (called under the master's lock).
  void OnSegmentMounted(const master::SegmentDump& segment) override;
  void OnSegmentUnmounted(std::string_view segment_name) override;
  // Returns the object's row id (objects.id), which the state keeps.
  uint64_t OnObjectCommitted(const master::ObjectDump& object) override;
  void OnObjectRemoved(std::string_view key, uint64_t listener_tag,
                       master::RemoveReason reason) override;

  // The disk tier's records (issue 31, TierService), under the master's
  // lock like the listener's calls: `key` has a copy on the disk named
  // `disk_id`, or no longer has one.
  void OnDiskReplica(const std::string& key, const std::string& disk_id,
                     uint64_t size_bytes) override;
  void OnDiskReplicaRemoved(const std::string& key) override;
  // Every disk replica in the file, before anything is served.
  Status LoadDiskReplicas(const DiskReplicaVisitor& fn);

  struct Change;

 private:
  Journal(std::unique_ptr<storage::SqliteDb> db, uint64_t stripe_size_bytes,
          JournalOptions options);
  Status Prepare();
  void Append(Change change);
  Status WaitFor(std::unique_lock<std::mutex>& lock, uint64_t target);
  void WriterLoop();
  void Publish(bool committed, uint64_t upto, bool synced, const Status& st, double seconds);
  void AssertSequence() const;  // under mu_
  Status Commit(const std::vector<Change>& batch);
  Status LoadSegments(master::MasterState& state, uint64_t now_us, LoadStats* stats,
                      std::map<uint32_t, uint32_t>* state_ids);
  Status LoadObjects(master::MasterState& state, uint64_t now_us, LoadStats* stats,
                     const std::map<uint32_t, uint32_t>& state_ids);
  // An objects row's columns as the load's reader copies them out of SQLite
  // (journal_load.cc); the building thread checks and decodes them.
  struct RawObjectRow {
    std::string key;
    std::string buffers;
    uint64_t size_bytes = 0;
    int64_t replicas = 0;
    int64_t row_check = 0;
    int64_t id = 0;
    bool soft_pin = false;
  };
  Status DecodeObjectRow(RawObjectRow& row, const std::map<uint32_t, uint32_t>& state_ids,
                         master::ObjectDump* o, bool* fnv_first) const;

  std::unique_ptr<storage::SqliteDb> db_;  // writer thread only (after LoadInto)
  const std::string path_;
  const uint64_t stripe_size_bytes_;
  const JournalOptions options_;
  struct Statements;
  std::unique_ptr<Statements> stmts_;

  // Under the master's lock: the row id of each mounted segment, which
  // object rows use instead of the name.
  std::map<std::string, uint32_t, std::less<>> segment_ids_;
  uint32_t next_segment_id_ = 1;
  uint64_t next_row_ = 1;  // objects.id of the next new object

  // The change sequence: Append numbers changes 1, 2, 3, ... (appended_);
  // the writer commits them in that order, each once, so durable_ is a
  // prefix of appended_ and synced_ a prefix of durable_, and pending_ holds
  // the newest ones (AssertSequence).
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // writer: changes queued or stopping
  std::condition_variable done_cv_;  // waiters: a commit finished
  std::vector<Change> pending_;
  uint64_t appended_ = 0;  // changes queued so far
  uint64_t last_free_ = 0;  // the last queued change that freed space
  uint64_t durable_ = 0;   // changes committed so far
  uint64_t synced_ = 0;    // changes committed and fdatasynced so far
  uint64_t commits_ = 0;
  uint64_t syncs_ = 0;
  double commit_seconds_ = 0;
  Status failure_;
  bool stopping_ = false;
  std::mutex callback_mu_;
  std::function<void()> on_commit_;  // under callback_mu_, also while it runs
  std::atomic<uint64_t> durable_seen_{0};
  std::atomic<bool> failed_{false};
  std::thread writer_;
};

// The RPC server's ReplyGate for a master with a journal: a round of
// requests that only reserved space (MasterService::TakePrivateOps) waits
// for its own evictions and any pending free; any other round, which may
// reveal other clients' changes, for every change queued so far (see
// Journal::RoundTicket).
class JournalGate final : public rpc::ReplyGate {
 public:
  explicit JournalGate(Journal& journal);  // must outlive neither
  ~JournalGate() override;
  uint64_t Ticket(uint64_t requests) override;
  uint64_t Released() const override;
  bool Failed() const override;
  void Subscribe(std::function<void()> wake) override;
  void Unsubscribe() override;

 private:
  Journal& journal_;
  std::mutex mu_;
  std::vector<std::function<void()>> wakes_;  // under mu_
};

}  // namespace mc::masterd

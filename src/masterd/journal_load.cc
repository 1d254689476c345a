// Journal::LoadInto: the master's state rebuilt from the file at start.
#include <sqlite3.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <limits>
#include <optional>
#include <thread>

#include "common/batch_pipe.h"
#include "masterd/journal.h"
#include "masterd/journal_rows.h"
#include "proto/byte_io.h"
#include "storage/sqlite_db.h"

namespace mc::masterd {

using namespace journal_rows;

namespace {

// A load hands rows from its reader thread to the state in batches of this
// many, with this many batches in the pipe: enough to ride out either
// side's stalls (a page fault, a B-tree page read), little enough to stay
// in cache.
constexpr size_t kLoadBatchRows = 1024;
constexpr size_t kLoadBatches = 4;

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

}  // namespace

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
// start). The key is swapped out of `row`, which gets o's old one to reuse.
Status Journal::DecodeObjectRow(RawObjectRow& row,
                                const std::map<uint32_t, uint32_t>& state_ids,
                                master::ObjectDump* o, bool* fnv_first) const {
  o->key.swap(row.key);
  o->key_hash = std::hash<std::string_view>()(o->key);
  o->size_bytes = row.size_bytes;
  o->soft_pin = row.soft_pin;
  o->complete = true;
  if (row.id <= 0)
    return Error(ErrorCode::INTERNAL_ERROR, path_ + ": object row '" + o->key + "': id " +
                                                std::to_string(row.id) + " is not positive");
  // ORDER BY a primary key: ids strictly increase.
  assert(o->listener_tag < static_cast<uint64_t>(row.id) || o->listener_tag == 0);
  o->listener_tag = static_cast<uint64_t>(row.id);
  const int64_t replicas = row.replicas;
  const std::string_view buffers = row.buffers;
  const size_t count = buffers.size() / kBufferRecordBytes;
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::INTERNAL_ERROR, path_ + ": object row '" + o->key + "': " + why);
  };
  if (!ObjectCheckMatches(row.row_check, o->key, o->size_bytes, o->soft_pin,
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

// Two threads share the load (a 50M-object start is minutes of CPU): a
// reader steps SQLite and copies each row's columns out, handing them over
// in batches; this one checks and decodes them and builds the state
// (MasterState is not thread-safe). The rows reach the state in file order,
// as from one thread. The reader does no more than SQLite needs: it was the
// slower of the two while it also checked, decoded and hashed (at 50M rows,
// about 70% of a core against the builder's 30%).
Status Journal::LoadObjects(master::MasterState& state, uint64_t now_us, LoadStats* stats,
                            const std::map<uint32_t, uint32_t>& state_ids) {
  sqlite3_stmt* s = nullptr;
  MC_RETURN_IF_ERROR(
      db_->Prepare("SELECT key, size_bytes, soft_pin, replicas, buffers, row_check, id"
                   " FROM objects ORDER BY id",
                   &s));
  const auto started = std::chrono::steady_clock::now();
  state.BeginBulkLoad(ExpectedObjects(*db_));
  BatchPipe<RawObjectRow> pipe(kLoadBatches, kLoadBatchRows);
  Status read_status;
  std::thread reader([&] {
    int rc = SQLITE_ROW;
    while (auto* b = pipe.TakeEmpty()) {
      while (b->count < b->items.size() && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        RawObjectRow& row = b->items[b->count++];
        row.key.assign(View(s, 0));
        row.size_bytes = AsU64(s, 1);
        row.soft_pin = sqlite3_column_int(s, 2) != 0;
        row.replicas = sqlite3_column_int64(s, 3);
        row.buffers.assign(View(s, 4));
        row.row_check = sqlite3_column_int64(s, 5);
        row.id = sqlite3_column_int64(s, 6);
      }
      pipe.PushFull(b);
      if (rc != SQLITE_ROW) break;
    }
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
      read_status = db_->Failure(path_ + ": reading objects");
    pipe.Close();
  });
  Status st;
  master::ObjectDump o;  // reused: its key and replicas keep their capacity
  bool fnv_first = false;  // which row check to try first (ObjectCheckMatches)
  uint64_t last_row = 0;
  while (auto* b = pipe.TakeFull()) {
    for (size_t i = 0; i < b->count && st.ok(); ++i) {
      st = DecodeObjectRow(b->items[i], state_ids, &o, &fnv_first);
      if (!st.ok()) break;
      last_row = o.listener_tag;
      st = state.LoadObject(o, now_us);
      if (!st.ok() && st.code() != ErrorCode::INTERNAL_ERROR)
        st = Error(ErrorCode::INTERNAL_ERROR,
                   path_ + ": object row '" + o.key + "': " + st.message());
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

#include "ha/fenced_log.h"

#include <cinttypes>
#include <cstdio>
#include <sstream>

namespace mc::ha {

namespace {

std::string Digits(uint64_t n, int width) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*" PRIu64, width, n);
  return buf;
}

Result<uint64_t> IndexOf(const std::string& key, size_t prefix_bytes) {
  uint64_t n = 0;
  if (key.size() != prefix_bytes + 20 ||
      std::sscanf(key.c_str() + prefix_bytes, "%20" SCNu64, &n) != 1) {
    return Error(ErrorCode::PROTOCOL_ERROR, "log key '" + key + "' is not an entry key");
  }
  return n;
}

Compare LeaderIs(const HaKeys& keys, const Term& term) {
  return {.target = Compare::Target::kCreate, .key = keys.leader, .number = term.revision};
}

}  // namespace

std::string FencedLog::EntryKey(uint64_t index) const {
  return keys_.log_prefix + Digits(index, 20);
}

Status FencedLog::Fenced(const Term& term, Txn txn, const char* what) {
  txn.compare.insert(txn.compare.begin(), LeaderIs(keys_, term));
  MC_ASSIGN_OR_RETURN(TxnResult r, kv_.Commit(txn));
  if (!r.succeeded) {
    return Error(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                 std::string(what) + " fenced: term " + std::to_string(term.revision) +
                     " no longer leads (or the entry exists)");
  }
  return Status::Ok();
}

Status FencedLog::Append(const Term& term, uint64_t index, const std::string& data) {
  if (data.size() > kMaxLogEntryBytes) {
    return Error(ErrorCode::INVALID_PARAMS, "log entry of " + std::to_string(data.size()) +
                                                " bytes is above " +
                                                std::to_string(kMaxLogEntryBytes));
  }
  const std::string key = EntryKey(index);
  Txn txn;
  txn.compare.push_back({.target = Compare::Target::kCreate, .key = key, .number = 0});
  txn.success.push_back({.kind = TxnOp::Kind::kPut, .key = key, .value = data});
  return Fenced(term, std::move(txn), "log append");
}

Result<std::vector<LogEntry>> FencedLog::ReadAfter(uint64_t after, int64_t limit) {
  if (limit <= 0 || limit > kMaxEntriesPerRead) limit = kMaxEntriesPerRead;
  MC_ASSIGN_OR_RETURN(RangeResult r,
                      kv_.Range(EntryKey(after + 1), PrefixEnd(keys_.log_prefix), limit));
  std::vector<LogEntry> out;
  out.reserve(r.kvs.size());
  for (KeyValue& kv : r.kvs) {
    MC_ASSIGN_OR_RETURN(uint64_t index, IndexOf(kv.key, keys_.log_prefix.size()));
    out.push_back({index, std::move(kv.value)});
  }
  return out;
}

Result<uint64_t> FencedLog::LastIndex() {
  MC_ASSIGN_OR_RETURN(std::optional<SnapshotInfo> snap, ReadSnapshotInfo());
  uint64_t last = snap ? snap->index : 0;
  for (;;) {
    MC_ASSIGN_OR_RETURN(std::vector<LogEntry> batch, ReadAfter(last));
    for (const LogEntry& e : batch) {
      if (e.index != last + 1) return last;  // a gap: the committed log ends here
      last = e.index;
    }
    if (batch.empty()) return last;
  }
}

Result<size_t> FencedLog::DropAfter(const Term& term, uint64_t index) {
  Txn txn;
  txn.compare.push_back(LeaderIs(keys_, term));
  const std::string from = EntryKey(index + 1);
  const std::string end = PrefixEnd(keys_.log_prefix);
  txn.success.push_back({.kind = TxnOp::Kind::kRange, .key = from, .range_end = end});
  txn.success.push_back({.kind = TxnOp::Kind::kDeleteRange, .key = from, .range_end = end});
  MC_ASSIGN_OR_RETURN(TxnResult r, kv_.Commit(txn));
  if (!r.succeeded) {
    return Error(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                 "log truncation fenced: term " + std::to_string(term.revision) +
                     " no longer leads");
  }
  return r.ranges.empty() ? size_t{0} : r.ranges[0].kvs.size();
}

Status FencedLog::WriteSnapshot(const Term& term, uint64_t index, const std::string& image) {
  const size_t chunks = (image.size() + kSnapshotChunkBytes - 1) / kSnapshotChunkBytes;
  if (chunks > kMaxSnapshotChunks) {
    return Error(ErrorCode::INVALID_PARAMS,
                 "snapshot of " + std::to_string(image.size()) + " bytes is too large");
  }
  MC_ASSIGN_OR_RETURN(std::optional<SnapshotInfo> old, ReadSnapshotInfo());
  const std::string id = std::to_string(term.revision) + "-" + std::to_string(index);
  const std::string chunk_dir = keys_.chunk_prefix + id + "/";
  for (size_t c = 0; c < chunks; ++c) {
    Txn txn;
    txn.success.push_back({.kind = TxnOp::Kind::kPut,
                           .key = chunk_dir + Digits(c, 6),
                           .value = image.substr(c * kSnapshotChunkBytes, kSnapshotChunkBytes)});
    MC_RETURN_IF_ERROR(Fenced(term, std::move(txn), "snapshot chunk"));
  }
  // Publish, and in the same txn drop the log it covers and the old chunks.
  Txn txn;
  txn.success.push_back({.kind = TxnOp::Kind::kPut, .key = keys_.snapshot,
                         .value = std::to_string(index) + " " + id + " " +
                                  std::to_string(chunks) + " " + std::to_string(image.size())});
  txn.success.push_back({.kind = TxnOp::Kind::kDeleteRange, .key = keys_.log_prefix,
                         .range_end = EntryKey(index + 1)});
  if (old && old->id != id) {
    const std::string old_dir = keys_.chunk_prefix + old->id + "/";
    txn.success.push_back(
        {.kind = TxnOp::Kind::kDeleteRange, .key = old_dir, .range_end = PrefixEnd(old_dir)});
  }
  txn.compare.insert(txn.compare.begin(), LeaderIs(keys_, term));
  MC_ASSIGN_OR_RETURN(TxnResult r, kv_.Commit(txn));
  if (!r.succeeded) {
    return Error(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS, "snapshot publish fenced");
  }
  // etcd keeps every old version until compacted; without this the trimmed
  // entries would still fill its database. An error (already compacted by
  // someone else) is harmless.
  (void)kv_.Compact(r.revision);
  return Status::Ok();
}

Result<std::optional<SnapshotInfo>> FencedLog::ReadSnapshotInfo() {
  MC_ASSIGN_OR_RETURN(std::vector<KeyValue> kvs, Get(kv_, keys_.snapshot));
  if (kvs.empty()) return std::optional<SnapshotInfo>();
  std::istringstream in(kvs[0].value);
  SnapshotInfo info;
  if (!(in >> info.index >> info.id >> info.chunks >> info.bytes) ||
      info.chunks > kMaxSnapshotChunks) {
    return Error(ErrorCode::PROTOCOL_ERROR, "snapshot key holds '" + kvs[0].value + "'");
  }
  return std::optional<SnapshotInfo>(info);
}

Result<std::optional<Snapshot>> FencedLog::ReadSnapshot() {
  MC_ASSIGN_OR_RETURN(std::optional<SnapshotInfo> info, ReadSnapshotInfo());
  if (!info) return std::optional<Snapshot>();
  Snapshot snap{.index = info->index};
  const std::string dir = keys_.chunk_prefix + info->id + "/";
  for (size_t c = 0; c < info->chunks; ++c) {
    MC_ASSIGN_OR_RETURN(std::vector<KeyValue> kvs, Get(kv_, dir + Digits(c, 6)));
    if (kvs.empty()) {
      // A newer snapshot replaced this one while we read: the caller retries.
      return Error(ErrorCode::RPC_FAIL, "snapshot " + info->id + " was replaced while read");
    }
    snap.data += kvs[0].value;
  }
  if (snap.data.size() != info->bytes) {
    return Error(ErrorCode::PROTOCOL_ERROR, "snapshot " + info->id + " has " +
                                                std::to_string(snap.data.size()) + " bytes, not " +
                                                std::to_string(info->bytes));
  }
  return std::optional<Snapshot>(std::move(snap));
}

}  // namespace mc::ha

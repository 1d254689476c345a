// FencedLog: a log of opaque entries in etcd, written only by the leader of
// a term, with snapshots that let it be trimmed.
//
// Entry n (1, 2, 3, ...) is the key <log_prefix><n as 20 digits>, so key
// order is entry order. Append writes entry n in one txn that also compares
// the leader key's create revision with the writer's term and entry n's
// absence: a deposed leader's write, or a second write of n, is refused
// (UNAVAILABLE_IN_CURRENT_STATUS, "fenced"). An entry is at most
// kMaxLogEntryBytes (etcd refuses requests above 1.5 MiB by default).
//
// Entries may be written out of order (a leader keeps several in flight).
// The committed log is the gap-free run of entries after the snapshot: an
// entry past a gap was never acknowledged (the leader releases replies in
// entry order), so readers stop at the first gap, and the next leader drops
// whatever lies past it (DropAfter) before it writes its first entry there.
//
// A snapshot is the image of everything up to entry n, written as chunks
// under a fresh id and then published by one fenced put of the snapshot key;
// then entries <= n and the previous snapshot's chunks are deleted and
// etcd's history before that revision compacted, so the space they held is
// reused. A reader that finds the log starting after the entry it needs
// loads the snapshot first (ReadSnapshot), then reads on from it.
//
// Not thread-safe: the leader's writer or a standby's follower use one each.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "ha/election.h"
#include "ha/etcd.h"

namespace mc::ha {

constexpr size_t kMaxLogEntryBytes = 1u << 20;
// A snapshot chunk (one put each, below etcd's request limit).
constexpr size_t kSnapshotChunkBytes = 1u << 20;
// Most snapshot chunks: a snapshot of up to 16 GiB.
constexpr size_t kMaxSnapshotChunks = 16384;
// Entries one ReadAfter returns at most.
constexpr int64_t kMaxEntriesPerRead = 256;

struct LogEntry {
  uint64_t index = 0;
  std::string data;
};

struct Snapshot {
  uint64_t index = 0;  // the image holds entries 1..index
  std::string data;
};

struct SnapshotInfo {
  uint64_t index = 0;
  std::string id;
  size_t chunks = 0;
  uint64_t bytes = 0;
};

class FencedLog {
 public:
  FencedLog(EtcdKv& kv, HaKeys keys) : kv_(kv), keys_(std::move(keys)) {}

  // Writes entry `index` under `term`. UNAVAILABLE_IN_CURRENT_STATUS when
  // fenced (the term is over, or the entry exists); RPC_FAIL when etcd did
  // not answer (the entry may or may not have landed: read it back).
  Status Append(const Term& term, uint64_t index, const std::string& data);
  // Entries after `after`, in order, at most `limit` (<= kMaxEntriesPerRead).
  Result<std::vector<LogEntry>> ReadAfter(uint64_t after, int64_t limit = kMaxEntriesPerRead);
  // The last entry of the gap-free run from the snapshot (or from entry 1;
  // 0 when the log is empty).
  Result<uint64_t> LastIndex();
  // Deletes every entry after `index` under `term` (one fenced txn); how
  // many there were. A new leader calls it with the last committed entry
  // before it appends.
  Result<size_t> DropAfter(const Term& term, uint64_t index);

  // Publishes `image` as the snapshot of entries 1..index and trims the
  // log behind it (see the top of this file).
  Status WriteSnapshot(const Term& term, uint64_t index, const std::string& image);
  Result<std::optional<SnapshotInfo>> ReadSnapshotInfo();
  Result<std::optional<Snapshot>> ReadSnapshot();

  std::string EntryKey(uint64_t index) const;

 private:
  Status Fenced(const Term& term, Txn txn, const char* what);
  EtcdKv& kv_;
  const HaKeys keys_;
};

}  // namespace mc::ha

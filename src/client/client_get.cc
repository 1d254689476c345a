// ClientImpl's reads: gets (through the master, or straight from a store
// at a location seen recently, see direct_reads.h), sizes, existence and
// removals.
#include "client/client_impl.h"

namespace mc::client {

namespace {

// Cuts `parts` down to the first `size` bytes (dropping empty parts) and
// returns the bytes they hold, which is less than `size` if they are short.
uint64_t TrimParts(std::vector<std::span<uint8_t>>& parts, uint64_t size) {
  uint64_t room = 0;
  size_t kept = 0;
  for (auto& p : parts) {
    if (room == size) break;
    if (p.empty()) continue;
    p = p.first(std::min<uint64_t>(p.size(), size - room));
    room += p.size();
    parts[kept++] = p;
  }
  parts.resize(kept);
  return room;
}

}  // namespace

Result<uint64_t> ClientImpl::GetInto(const std::string& key, std::span<uint8_t> buffer) {
  auto list = ReplicaLists({msg::KeyRequest{id_, key}});
  Result<msg::GetReplicaListReply> reply =
      list[0].status.ok() ? Result<msg::GetReplicaListReply>(std::move(list[0].value))
                          : Result<msg::GetReplicaListReply>(list[0].status);
  if (!reply.ok()) {
    if (reply.code() == ErrorCode::OBJECT_NOT_FOUND) return Error(reply.code(), "not found");
    return reply.status();
  }
  if (reply->size_bytes > buffer.size()) {
    return Error(ErrorCode::BUFFER_OVERFLOW, "object of " + std::to_string(reply->size_bytes) +
                                                 " bytes does not fit a buffer of " +
                                                 std::to_string(buffer.size()));
  }
  UnreachableStores unreachable;
  MC_RETURN_IF_ERROR(ReadObject(*reply, {buffer.first(reply->size_bytes)}, &unreachable));
  return reply->size_bytes;
}

namespace {
// The master is reading the object from a disk tier into memory: ask again
// shortly (msg::kStagingFromDisk), up to kMaxStagingPolls times.
constexpr uint32_t kMaxStagingPolls = 100;
constexpr uint64_t kStagingPollMaxMs = 50;
bool Staging(const Status& st) {
  return st.code() == ErrorCode::REPLICA_IS_NOT_READY &&
         st.message().starts_with(msg::kStagingFromDisk);
}
}  // namespace

std::vector<msg::BatchItem<msg::GetReplicaListReply>> ClientImpl::ReplicaLists(
    const std::vector<msg::KeyRequest>& reqs, bool to_read) {
  auto lists = AskReplicaLists(reqs);
  std::vector<bool> staged(reqs.size(), false);
  for (uint32_t poll = 0; poll < kMaxStagingPolls; ++poll) {
    bool waiting = false;
    for (size_t i = 0; i < reqs.size(); ++i) {
      if (!Staging(lists[i].status)) continue;
      staged[i] = true;
      if (!waiting) {  // once per round, before the first key asked again
        std::this_thread::sleep_for(
            std::chrono::milliseconds(std::min<uint64_t>(kStagingPollMaxMs, 2 + poll * 4)));
      }
      waiting = true;
      lists[i] = AskReplicaLists({reqs[i]})[0];
    }
    if (!waiting) break;
  }
  uint64_t from_disk = 0;
  for (size_t i = 0; i < reqs.size(); ++i) from_disk += staged[i] && lists[i].status.ok();
  if (to_read && from_disk != 0) staged_reads_.fetch_add(from_disk, std::memory_order_relaxed);
  return lists;
}

std::vector<msg::BatchItem<msg::GetReplicaListReply>> ClientImpl::AskReplicaLists(
    const std::vector<msg::KeyRequest>& reqs) {
  std::vector<msg::BatchItem<msg::GetReplicaListReply>> lists(reqs.size());
  if (reqs.size() == 1) {
    auto r = master_->GetReplicaList(reqs[0]);
    if (r.ok()) lists[0].value = std::move(*r);
    else lists[0].status = r.status();
    return lists;
  }
  auto r = master_->BatchGetReplicaList(reqs);
  if (!r.ok()) {
    for (auto& l : lists) l.status = r.status();
    return lists;
  }
  return std::move(*r);
}

std::vector<Status> ClientImpl::FetchFromMaster(const std::vector<std::string>& keys,
                                                const DestFn& dest, std::vector<uint64_t>* sizes) {
  std::vector<Status> out(keys.size());
  sizes->assign(keys.size(), 0);
  std::vector<msg::KeyRequest> reqs;
  reqs.reserve(keys.size());
  for (const auto& k : keys) reqs.push_back({id_, k});
  const uint64_t forgets_before = direct_.forgets();
  auto lists = ReplicaLists(reqs);  // one master round trip for the whole batch
  std::vector<Parts> bufs(keys.size());
  std::vector<Planned> planned;
  // Each key's ops in `planned` (empty when it planned none).
  std::vector<std::pair<size_t, size_t>> op_range(keys.size(), {0, 0});
  bool planned_all = true;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!lists[i].status.ok()) {
      out[i] = lists[i].status;
      if (out[i].code() == ErrorCode::OBJECT_NOT_FOUND) out[i] = Error(out[i].code(), "not found");
      continue;
    }
    auto& reply = lists[i].value;
    LocalFirst(reply);
    (*sizes)[i] = reply.size_bytes;
    bufs[i] = dest(i, reply.size_bytes);
    const uint64_t room = TrimParts(bufs[i], reply.size_bytes);
    if (room < reply.size_bytes) {
      out[i] = Error(ErrorCode::BUFFER_OVERFLOW, "buffer of " + std::to_string(room) +
                                                     " bytes for an object of " +
                                                     std::to_string(reply.size_bytes));
      continue;
    }
    const size_t first = planned.size();
    if (reply.replicas.empty() ||
        !Plan(reply.replicas[0], transfer::OpKind::kRead, bufs[i], reply.size_bytes, &planned).ok()) {
      planned_all = false;
    } else {
      op_range[i] = {first, planned.size()};
      SealIfCacheable(reply, planned, first);
    }
  }
  // Fast path: the first replica of every key moves in one concurrent batch.
  // Otherwise (or if it fails), key by key through every replica in turn,
  // skipping the stores the fast path found unreachable: each would only
  // cost another transfer_timeout.
  UnreachableStores unreachable;
  if (!planned_all || !Run(planned, &unreachable).ok()) {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (out[i].ok() && lists[i].status.ok()) {
        out[i] = ReadObject(lists[i].value, bufs[i], &unreachable);
      }
    }
  } else {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (out[i].ok() && lists[i].status.ok()) {
        Learn(keys[i], lists[i].value, planned, op_range[i].first, op_range[i].second,
              forgets_before);
      }
    }
  }
  ReleaseLeases(reqs, lists);
  return out;
}

std::vector<Status> ClientImpl::Fetch(const std::vector<std::string>& keys, const DestFn& dest,
                                      std::vector<uint64_t>* sizes) {
  if (!direct_.enabled()) return FetchFromMaster(keys, dest, sizes);
  std::vector<bool> served = FetchDirect(keys, dest, sizes);
  std::vector<size_t> missed;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!served[i]) missed.push_back(i);
  }
  std::vector<Status> out(keys.size());
  if (!missed.empty()) {
    std::vector<std::string> rest;
    rest.reserve(missed.size());
    for (size_t i : missed) rest.push_back(keys[i]);
    std::vector<uint64_t> rest_sizes;
    std::vector<Status> st = FetchFromMaster(
        rest, [&](size_t j, uint64_t size) { return dest(missed[j], size); }, &rest_sizes);
    for (size_t j = 0; j < missed.size(); ++j) {
      out[missed[j]] = std::move(st[j]);
      (*sizes)[missed[j]] = rest_sizes[j];
    }
  }
  ReportAccesses(/*force=*/false);
  return out;
}

std::vector<bool> ClientImpl::FetchDirect(const std::vector<std::string>& keys,
                                          const DestFn& dest, std::vector<uint64_t>* sizes) {
  sizes->assign(keys.size(), 0);
  std::vector<bool> served(keys.size(), false);
  const uint64_t now_ms = clock_.UnixMs();
  std::vector<DirectReads::Entry> entries;
  std::vector<size_t> which;
  std::vector<transfer::TransferOp> ops;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto e = direct_.Lookup(keys[i], now_ms);
    if (!e) continue;
    Parts parts = dest(i, e->size_bytes);
    // One destination that holds it: else the master path says what is wrong.
    if (parts.size() != 1 || parts[0].size() < e->size_bytes) continue;
    which.push_back(i);
    entries.push_back(std::move(*e));
    transfer::TransferOp op;
    op.kind = transfer::OpKind::kRead;
    op.remote_offset = entries.back().offset;
    op.buffer = parts[0].data();
    op.len = entries.back().size_bytes;
    op.grant = entries.back().grant;
    op.sealed = true;
    op.seal = entries.back().seal;
    ops.push_back(std::move(op));
  }
  if (ops.empty()) return served;
  for (size_t k = 0; k < ops.size(); ++k) ops[k].endpoint = &entries[k].endpoint;
  (void)transport_->Batch(ops);  // per-op statuses below
  std::vector<transfer::TransferOp> moved;
  for (size_t k = 0; k < ops.size(); ++k) {
    const std::string& key = keys[which[k]];
    if (!ops[k].status.ok()) {
      // Stale (the space was written since), or the store is gone: ask the master.
      direct_.Forget(key);
      continue;
    }
    served[which[k]] = true;
    (*sizes)[which[k]] = entries[k].size_bytes;
    direct_.CountHit(key);
    moved.push_back(ops[k]);
  }
  if (!moved.empty()) {
    CountPaths(moved);
    ReportTransfers(/*force=*/false);
  }
  return served;
}

void ClientImpl::SealIfCacheable(const msg::GetReplicaListReply& reply,
                                 std::vector<Planned>& planned, size_t first) const {
  if (!direct_.enabled() || planned.size() != first + 1 ||
      reply.size_bytes > DirectReads::kMaxObjectBytes || reply.replicas[0].buffers.size() != 1 ||
      reply.replicas[0].buffers[0].sealed_capability.empty()) {
    return;
  }
  planned[first].op.sealed = true;
  planned[first].op.seal = 0;  // learn it
}

void ClientImpl::Learn(const std::string& key, const msg::GetReplicaListReply& reply,
                       const std::vector<Planned>& planned, size_t first, size_t end,
                       uint64_t forgets_before) {
  if (end != first + 1 || !planned[first].op.sealed) return;
  direct_.Learn(key, reply, reply.replicas[0].buffers[0], planned[first].endpoint,
                planned[first].op.seal, clock_.UnixMs(), forgets_before);
}

void ClientImpl::ReportAccesses(bool force) {
  const uint64_t now = clock_.NowUs();
  uint64_t last = last_access_report_us_.load();
  if (!force && !direct_.report_due() && now - last < kTransferReportIntervalUs) return;
  // One thread reports a round; the others go on.
  if (!last_access_report_us_.compare_exchange_strong(last, now) && !force) return;
  std::vector<msg::KeyAccess> hits = direct_.TakeAccesses();
  for (size_t at = 0; at < hits.size(); at += DirectReads::kMaxPendingAccessKeys) {
    msg::AccessReport report{id_, {}};
    const size_t end = std::min(hits.size(), at + DirectReads::kMaxPendingAccessKeys);
    report.accesses.assign(std::make_move_iterator(hits.begin() + at),
                           std::make_move_iterator(hits.begin() + end));
    Status st = master_->ReportAccesses(report);
    if (!st.ok() && st.code() != ErrorCode::NOT_SUPPORTED) {
      MC_LOG(DEBUG) << "direct-read hits not reported: " << st.ToString();
    }
  }
}

void ClientImpl::ReleaseLeases(
    std::vector<msg::KeyRequest>& reqs,
    const std::vector<msg::BatchItem<msg::GetReplicaListReply>>& lists) {
  // Done reading: the master may evict these now rather than at the end of
  // their leases. Sent without waiting, in front of the next request (or
  // within a millisecond; rpc/client.h); if it is lost the leases run out.
  size_t granted = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (!lists[i].status.ok()) continue;
    if (granted != i) reqs[granted] = std::move(reqs[i]);
    ++granted;
  }
  if (granted == 0) return;
  reqs.resize(granted);
  master_->ReleaseLeasesSoon(reqs);
}

std::vector<Result<std::vector<uint8_t>>> ClientImpl::BatchGet(const std::vector<std::string>& keys) {
  std::vector<std::vector<uint8_t>> data(keys.size());
  std::vector<uint64_t> sizes;
  auto st = Fetch(keys, [&](size_t i, uint64_t size) {
    data[i].resize(size);
    return Parts{std::span<uint8_t>(data[i])};
  }, &sizes);
  std::vector<Result<std::vector<uint8_t>>> out;
  out.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (st[i].ok()) out.emplace_back(std::move(data[i]));
    else out.emplace_back(st[i]);
  }
  return out;
}

std::vector<Result<uint64_t>> ClientImpl::FetchSizes(const std::vector<std::string>& keys,
                                                     const DestFn& dest) {
  std::vector<uint64_t> sizes;
  auto st = Fetch(keys, dest, &sizes);
  std::vector<Result<uint64_t>> out;
  out.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (st[i].ok()) out.emplace_back(sizes[i]);
    else out.emplace_back(st[i]);
  }
  return out;
}

std::vector<Result<uint64_t>> ClientImpl::BatchGetInto(const std::vector<std::string>& keys,
                                                       const std::vector<std::span<uint8_t>>& buffers) {
  return FetchSizes(keys, [&](size_t i, uint64_t) { return Parts{buffers[i]}; });
}

std::vector<Result<uint64_t>> ClientImpl::BatchGetIntoParts(const std::vector<std::string>& keys,
                                                            const std::vector<Parts>& parts) {
  return FetchSizes(keys, [&](size_t i, uint64_t) { return parts[i]; });
}

Result<uint64_t> ClientImpl::Size(const std::string& key) {
  std::vector<msg::KeyRequest> reqs{{id_, key}};
  auto lists = ReplicaLists(reqs, /*to_read=*/false);
  if (!lists[0].status.ok()) return lists[0].status;
  const uint64_t size = lists[0].value.size_bytes;
  ReleaseLeases(reqs, lists);  // nothing was read: give the lease back at once
  return size;
}

std::vector<Status> ClientImpl::BatchRemove(const std::vector<std::string>& keys, bool force) {
  if (keys.empty()) return {};
  if (keys.size() == 1) return {Remove(keys[0], force)};
  std::vector<msg::RemoveRequest> reqs;
  reqs.reserve(keys.size());
  for (const auto& k : keys) reqs.push_back({k, force});
  auto r = master_->BatchRemove(reqs);
  if (!r.ok()) return std::vector<Status>(keys.size(), r.status());
  return std::move(*r);
}

std::vector<Result<bool>> ClientImpl::BatchExists(const std::vector<std::string>& keys) {
  std::vector<msg::KeyRequest> reqs;
  for (const auto& k : keys) reqs.push_back({id_, k});
  std::vector<Result<bool>> out;
  auto r = master_->BatchExistKey(reqs);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!r.ok()) {
      out.emplace_back(r.status());
    } else if (!(*r)[i].status.ok()) {
      out.emplace_back((*r)[i].status);
    } else {
      if (!(*r)[i].value) direct_.Forget(keys[i]);  // gone at the master: stop reading it
      out.emplace_back((*r)[i].value);
    }
  }
  return out;
}

}  // namespace mc::client

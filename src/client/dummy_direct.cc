#include "client/dummy_direct.h"

#include "common/clock.h"
#include "transfer/access.h"

namespace mc::client {

namespace {

// DirectReads' TTL is for what it learns itself; a dummy installs entries
// with the expiry its standalone client computed, so any non-zero value.
constexpr uint64_t kInstalledTtlUs = 1;

std::unique_ptr<transfer::ShmTransport> MakeShm() {
  transfer::ShmTransportOptions o;
  o.check = transfer::GrantBoundsCheck([] { return SystemClock::Instance().UnixMs(); });
  return std::make_unique<transfer::ShmTransport>(std::move(o));
}

}  // namespace

DummyDirect::DummyDirect() : cache_(kInstalledTtlUs), shm_(MakeShm()) {}

DummyDirect::~DummyDirect() { UnmapForgetTable(table_.load()); }

void DummyDirect::Reset(const ForgetTable* table) {
  cache_.Clear();
  shm_ = MakeShm();  // unmaps the old segments
  UnmapForgetTable(table_.exchange(table));
}

size_t DummyDirect::Read(const std::vector<std::string>& keys,
                         const std::vector<std::vector<std::span<uint8_t>>>& parts,
                         std::vector<bool>* served, std::vector<uint64_t>* sizes) {
  served->assign(keys.size(), false);
  sizes->assign(keys.size(), 0);
  const ForgetTable* table = table_.load();
  if (table == nullptr || cache_.size() == 0) return 0;
  const uint64_t now_ms = SystemClock::Instance().UnixMs();
  std::vector<DirectReads::Entry> entries;
  std::vector<size_t> which;
  std::vector<transfer::TransferOp> ops;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto e = cache_.Lookup(keys[i], now_ms);
    if (!e) continue;
    if (ForgetMark(*table, keys[i]) != e->forget_mark) {
      cache_.Forget(keys[i]);  // changed through the standalone client since
      continue;
    }
    // One destination that holds it: else the standalone client says what is wrong.
    if (parts[i].size() != 1 || parts[i][0].size() < e->size_bytes) continue;
    transfer::TransferOp op;
    op.kind = transfer::OpKind::kRead;
    op.remote_offset = e->offset;
    op.buffer = parts[i][0].data();
    op.len = e->size_bytes;
    op.grant = e->grant;
    op.sealed = true;
    op.seal = e->seal;
    ops.push_back(std::move(op));
    which.push_back(i);
    entries.push_back(std::move(*e));
  }
  if (ops.empty()) return 0;
  for (size_t k = 0; k < ops.size(); ++k) ops[k].endpoint = &entries[k].endpoint;
  (void)shm_->Batch(ops);  // per-op statuses below
  size_t n = 0;
  for (size_t k = 0; k < ops.size(); ++k) {
    const std::string& key = keys[which[k]];
    // Stale (written since), or a segment this process cannot map: ask.
    if (!ops[k].status.ok()) {
      cache_.Forget(key);
      continue;
    }
    // A change that landed during the read: its bytes may be the new
    // version's or the old one's; only the old location's are certain.
    if (ForgetMark(*table, key) != entries[k].forget_mark) {
      cache_.Forget(key);
      continue;
    }
    (*served)[which[k]] = true;
    (*sizes)[which[k]] = entries[k].size_bytes;
    cache_.CountHit(key);
    ++n;
  }
  hits_.fetch_add(n);
  return n;
}

void DummyDirect::Learn(const std::vector<std::string>& keys,
                        const std::vector<msg::DummyLocation>& where) {
  if (table_.load() == nullptr) return;
  for (const msg::DummyLocation& l : where) {
    if (l.index >= keys.size() || l.shm_path.empty() || l.seal == 0) continue;
    DirectReads::Entry e;
    e.generation = l.generation;
    e.size_bytes = l.size_bytes;
    e.endpoint.shm_path = l.shm_path;
    e.store = l.store;
    e.offset = l.offset;
    e.grant = {l.grant_offset, l.grant_size_bytes, l.grant_expiry_unix_ms, l.grant_signature,
               /*sealed_only=*/true};
    e.seal = l.seal;
    e.expiry_unix_ms = l.expiry_unix_ms;
    e.forget_mark = l.forget_mark;
    cache_.Install(keys[l.index], std::move(e));
  }
}

std::vector<msg::KeyAccess> DummyDirect::DueAccesses(uint64_t now_us) {
  uint64_t last = last_report_us_.load();
  if (!cache_.report_due() && now_us - last < kReportIntervalUs) return {};
  if (!last_report_us_.compare_exchange_strong(last, now_us)) return {};  // another thread does
  return cache_.TakeAccesses();
}

}  // namespace mc::client

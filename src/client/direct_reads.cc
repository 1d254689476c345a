#include "client/direct_reads.h"

#include <algorithm>
#include <limits>

namespace mc::client {

std::optional<DirectReads::Entry> DirectReads::Lookup(const std::string& key,
                                                     uint64_t now_unix_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  if (now_unix_ms >= it->second.expiry_unix_ms) {
    entries_.erase(it);
    return std::nullopt;
  }
  return it->second;
}

void DirectReads::Learn(const std::string& key, const msg::GetReplicaListReply& reply,
                        const msg::BufferDesc& buffer, const transfer::Endpoint& endpoint,
                        uint64_t seal, uint64_t now_unix_ms, uint64_t forgets_before) {
  if (!enabled() || seal == 0 || buffer.sealed_capability.empty() ||
      reply.size_bytes > kMaxObjectBytes || buffer.size_bytes != reply.size_bytes) {
    return;
  }
  Entry e;
  e.generation = reply.generation;
  e.size_bytes = reply.size_bytes;
  e.endpoint = endpoint;
  e.store = buffer.endpoint;
  e.offset = buffer.offset;
  e.grant = {buffer.offset, buffer.size_bytes, buffer.sealed_capability_expiry_unix_ms,
             buffer.sealed_capability};
  e.grant.sealed_only = true;
  e.grant.term = buffer.capability_term;
  e.seal = seal;
  // Never past the grant: the store would refuse it then anyway.
  e.expiry_unix_ms = std::min(now_unix_ms + ttl_us_ / 1000, e.grant.expiry_unix_ms);
  std::lock_guard<std::mutex> lock(mu_);
  if (forgets_.load() != forgets_before) return;  // a put or removal came in between
  InsertLocked(key, std::move(e));
}

void DirectReads::Install(const std::string& key, Entry entry) {
  std::lock_guard<std::mutex> lock(mu_);
  InsertLocked(key, std::move(entry));
}

void DirectReads::InsertLocked(const std::string& key, Entry e) {
  if (entries_.size() >= kMaxEntries && entries_.find(key) == entries_.end()) {
    entries_.erase(entries_.begin());  // any one: the cache only saves round trips
  }
  entries_[key] = std::move(e);
}

void DirectReads::Forget(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  forgets_.fetch_add(1);
  entries_.erase(key);
}

void DirectReads::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  forgets_.fetch_add(1);
  entries_.clear();
}

void DirectReads::CountHit(const std::string& key, uint32_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t& count = hits_[key];
  count = static_cast<uint32_t>(
      std::min<uint64_t>(uint64_t{count} + n, std::numeric_limits<uint32_t>::max()));
}

std::vector<msg::KeyAccess> DirectReads::TakeAccesses() {
  std::unordered_map<std::string, uint32_t> hits;
  {
    std::lock_guard<std::mutex> lock(mu_);
    hits.swap(hits_);
  }
  std::vector<msg::KeyAccess> out;
  out.reserve(hits.size());
  for (auto& [key, n] : hits) out.push_back({key, n});
  return out;
}

bool DirectReads::report_due() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_.size() >= kMaxPendingAccessKeys;
}

size_t DirectReads::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace mc::client

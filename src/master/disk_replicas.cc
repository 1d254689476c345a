#include "master/disk_replicas.h"

#include "msg/tier_messages.h"

#include <algorithm>
#include <unordered_set>

namespace mc::master {

void DiskReplicas::Attach(const std::string& disk_id, const std::string& segment_name,
                          msg::ClientId client, uint64_t capacity_bytes) {
  Disk& d = disks_[disk_id];
  d.segment_name = segment_name;
  d.client = client;
  d.capacity_bytes = capacity_bytes;
}

void DiskReplicas::DetachSegment(std::string_view segment_name) {
  for (auto& [id, d] : disks_)
    if (d.segment_name == segment_name) d.segment_name.clear();
}

uint64_t DiskReplicas::FileBytes(std::string_view key, uint64_t size_bytes) {
  constexpr uint64_t kBlock = 4096, kFixedHeader = 64;
  auto pad = [](uint64_t n) { return (n + kBlock - 1) / kBlock * kBlock; };
  return pad(kFixedHeader + key.size()) + pad(size_bytes);
}

void DiskReplicas::Unlink(std::map<std::string, Entry, std::less<>>::iterator it) {
  Disk& d = disks_[it->second.disk_id];
  const uint64_t file = FileBytes(it->first, it->second.size_bytes);
  d.lru.erase(it->second.lru_seq);
  d.used_bytes -= file;
  --d.objects;
  bytes_ -= file;
}

std::vector<std::string> DiskReplicas::MakeRoom(const std::string& disk_id, uint64_t bytes) {
  std::vector<std::string> dropped;
  Disk& d = disks_[disk_id];
  while (d.capacity_bytes > 0 && d.used_bytes + bytes > d.capacity_bytes && !d.lru.empty()) {
    auto victim = entries_.find(d.lru.begin()->second);
    dropped.push_back(victim->first);
    Unlink(victim);
    entries_.erase(victim);
  }
  return dropped;
}

std::vector<std::string> DiskReplicas::Add(const std::string& key, const std::string& disk_id,
                                           uint64_t size_bytes) {
  if (auto old = entries_.find(key); old != entries_.end()) {
    Unlink(old);
    entries_.erase(old);
  }
  const uint64_t file = FileBytes(key, size_bytes);
  // Capacity 0: not announced yet (a load from the journal), nothing to fit.
  std::vector<std::string> dropped = MakeRoom(disk_id, file);
  Disk& d = disks_[disk_id];
  const uint64_t seq = next_seq_++;
  entries_.emplace(key, Entry{disk_id, size_bytes, seq});
  d.lru.emplace(seq, key);
  d.used_bytes += file;
  ++d.objects;
  bytes_ += file;
  return dropped;
}

const DiskReplicas::Entry* DiskReplicas::Find(std::string_view key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

const DiskReplicas::Disk* DiskReplicas::FindDisk(std::string_view disk_id) const {
  auto it = disks_.find(disk_id);
  return it == disks_.end() ? nullptr : &it->second;
}

const DiskReplicas::Disk* DiskReplicas::ReadableDisk(std::string_view key) const {
  const Entry* e = Find(key);
  if (e == nullptr) return nullptr;
  const Disk* d = FindDisk(e->disk_id);
  return d != nullptr && !d->segment_name.empty() ? d : nullptr;
}

std::optional<std::string> DiskReplicas::DiskOfSegment(std::string_view segment_name) const {
  for (const auto& [id, d] : disks_)
    if (!segment_name.empty() && d.segment_name == segment_name) return id;
  return std::nullopt;
}

bool DiskReplicas::Remove(std::string_view key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  Unlink(it);
  entries_.erase(it);
  return true;
}

void DiskReplicas::Touch(std::string_view key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  Disk& d = disks_[it->second.disk_id];
  d.lru.erase(it->second.lru_seq);
  it->second.lru_seq = next_seq_++;
  d.lru.emplace(it->second.lru_seq, it->first);
}

std::vector<std::string> DiskReplicas::ForgetUnannounced(
    const std::string& disk_id, const std::vector<std::string>& announced) {
  std::vector<std::string> gone;
  auto d = disks_.find(disk_id);
  if (d == disks_.end()) return gone;
  const std::unordered_set<std::string> kept(announced.begin(), announced.end());
  for (const auto& [seq, key] : d->second.lru)
    if (!kept.contains(key)) gone.push_back(key);
  for (const auto& key : gone) Remove(key);
  return gone;
}

bool PromotionGate::Hit(std::string_view key, uint64_t now_us) {
  if (threshold_ <= 1) return true;
  if (counts_.size() >= kMaxTrackedKeys) {
    std::vector<uint64_t> times;
    times.reserve(counts_.size());
    for (const auto& [k, c] : counts_) times.push_back(c.first_us);
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    const uint64_t median = times[times.size() / 2];
    std::erase_if(counts_, [&](const auto& kv) { return kv.second.first_us <= median; });
  }
  auto [it, inserted] = counts_.try_emplace(std::string(key), Count{now_us, 0});
  if (!inserted && now_us - it->second.first_us > window_us_) it->second = Count{now_us, 0};
  if (++it->second.reads < threshold_) return false;
  counts_.erase(it);  // admitted: counting starts again
  return true;
}

void PromotionGate::Forget(std::string_view key) { counts_.erase(std::string(key)); }

msg::ListKeysReply DiskReplicas::MergeKeys(const msg::ListKeysReply& memory,
                                           const msg::ListKeysRequest& req, uint32_t limit,
                                           std::vector<uint8_t>* tiers) const {
  // The same resumption rule as MasterState::ListKeys: after the cursor.
  auto d = req.cursor.empty() || req.cursor < req.prefix ? entries_.lower_bound(req.prefix)
                                                        : entries_.upper_bound(req.cursor);
  auto listed = [&] {
    return d != entries_.end() && d->first.compare(0, req.prefix.size(), req.prefix) == 0;
  };
  // Memory keys past a truncated memory page are not known here: disk keys
  // stop at its last key too.
  auto before_memory_end = [&] {
    return memory.next_cursor.empty() || d->first <= memory.next_cursor;
  };
  msg::ListKeysReply out;
  tiers->clear();
  size_t m = 0;
  while (out.keys.size() < limit) {
    const bool has_m = m < memory.keys.size();
    const bool has_d = listed() && before_memory_end();
    if (!has_m && !has_d) break;
    if (has_m && (!has_d || memory.keys[m].key <= d->first)) {
      const bool both = has_d && memory.keys[m].key == d->first;
      out.keys.push_back(memory.keys[m++]);
      tiers->push_back(static_cast<uint8_t>(both ? msg::KeyTier::kBoth : msg::KeyTier::kMemory));
      if (both) ++d;
    } else {
      out.keys.push_back(msg::KeyInfo{d->first, d->second.size_bytes, 0, false});
      tiers->push_back(static_cast<uint8_t>(msg::KeyTier::kDisk));
      ++d;
    }
  }
  const bool more = m < memory.keys.size() || !memory.next_cursor.empty() || listed();
  if (more && !out.keys.empty()) out.next_cursor = out.keys.back().key;
  return out;
}

}  // namespace mc::master

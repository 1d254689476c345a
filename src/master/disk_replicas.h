// DiskReplicas: the master's record of objects on the stores' disk tiers.
//
// A side table beside the object index: one entry per key that has a disk
// copy (with or without a copy in memory), naming the disk that holds it.
// A disk is a store's tier, named by its `disk_id` (host identity and path)
// so it is the same disk after the store restarts on another port; while
// its store is mounted the disk is readable through that store's segment.
// Each disk has the capacity its store announced; Add evicts the disk's
// least recently used entries (LRU: Add and Touch make an entry the most
// recent) to keep the recorded bytes within it. Objects in memory pay
// nothing for this table. Pure state: no I/O, time passed in.
//
// PromotionGate: the --promotion-on-hit admission rule. An object read
// from disk is copied back into memory to stay only when this read makes
// `threshold` reads from disk within `window_us` of the first of them (by
// default a second hit within the window; 1 promotes every read): one-off
// reads of cold objects do not push hot ones out of memory.
//
// Not thread-safe: the master service calls it under its own lock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "msg/messages.h"

namespace mc::master {

class DiskReplicas {
 public:
  // What a disk tier file of `size_bytes` under `key` takes on disk, as the
  // store counts it against its capacity (tier/object_file.h: a header
  // with the key, then the bytes, each padded to 4 KiB blocks).
  static uint64_t FileBytes(std::string_view key, uint64_t size_bytes);

  struct Entry {
    std::string disk_id;
    uint64_t size_bytes = 0;  // the object's; the disk holds FileBytes of it
    uint64_t lru_seq = 0;  // larger: used more recently
  };
  struct Disk {
    std::string segment_name;  // empty: its store is not mounted
    msg::ClientId client;
    uint64_t capacity_bytes = 0;
    uint64_t used_bytes = 0;  // FileBytes of its entries
    uint64_t objects = 0;
    std::map<uint64_t, std::string> lru;  // lru_seq -> key, oldest first
  };

  // The disk's store is mounted as `segment_name` (again): its entries are
  // readable through it.
  void Attach(const std::string& disk_id, const std::string& segment_name,
              msg::ClientId client, uint64_t capacity_bytes);
  // The segment left (unmounted, or its store declared dead): the disk's
  // entries stay recorded, unreadable until the store attaches again.
  void DetachSegment(std::string_view segment_name);

  // Records `key` on `disk_id`, replacing an older entry of the key. Returns
  // the keys dropped from that disk to fit its capacity (oldest first),
  // which never include `key`. Adding to a disk not attached is allowed
  // (the journal's load).
  std::vector<std::string> Add(const std::string& key, const std::string& disk_id,
                               uint64_t size_bytes);
  // Drops `disk_id`'s least recently used entries until `bytes` more fit
  // (a write about to start); returns their keys.
  std::vector<std::string> MakeRoom(const std::string& disk_id, uint64_t bytes);
  const Entry* Find(std::string_view key) const;
  // The disk holding `key` when its store is mounted; null otherwise.
  const Disk* ReadableDisk(std::string_view key) const;
  const Disk* FindDisk(std::string_view disk_id) const;
  // The disk id attached as `segment_name`, if any.
  std::optional<std::string> DiskOfSegment(std::string_view segment_name) const;
  bool Remove(std::string_view key);
  void Touch(std::string_view key);
  // Forgets every entry of `disk_id` whose key is not in `announced` (the
  // store no longer has it); returns them.
  std::vector<std::string> ForgetUnannounced(const std::string& disk_id,
                                             const std::vector<std::string>& announced);
  // A page of ListKeys with the disk's keys merged in: `memory` is the
  // state's answer to `req` (at most `limit` keys, its next_cursor set when
  // more follow), the result the same page over memory and disk (at most
  // `limit` keys; disk-only ones with replicas 0) and in `tiers` each key's
  // msg::KeyTier.
  msg::ListKeysReply MergeKeys(const msg::ListKeysReply& memory, const msg::ListKeysRequest& req,
                               uint32_t limit, std::vector<uint8_t>* tiers) const;
  // Every entry of every disk, by key.
  const std::map<std::string, Entry, std::less<>>& entries() const { return entries_; }
  const std::map<std::string, Disk, std::less<>>& disks() const { return disks_; }
  uint64_t objects() const { return entries_.size(); }
  uint64_t bytes() const { return bytes_; }  // FileBytes of every entry

 private:
  void Unlink(std::map<std::string, Entry, std::less<>>::iterator it);
  std::map<std::string, Entry, std::less<>> entries_;
  std::map<std::string, Disk, std::less<>> disks_;
  uint64_t next_seq_ = 1;
  uint64_t bytes_ = 0;
};

class PromotionGate {
 public:
  // At most this many keys remembered; beyond, the oldest half is forgotten.
  static constexpr size_t kMaxTrackedKeys = 1 << 16;
  explicit PromotionGate(uint64_t window_us, uint32_t threshold = 2)
      : window_us_(window_us), threshold_(threshold) {}
  // A read of `key` from disk at `now_us`: true when it should be promoted.
  bool Hit(std::string_view key, uint64_t now_us);
  void Forget(std::string_view key);

 private:
  struct Count {
    uint64_t first_us;  // the first read of this count
    uint32_t reads;
  };
  uint64_t window_us_;
  uint32_t threshold_;
  std::unordered_map<std::string, Count> counts_;
};

}  // namespace mc::master

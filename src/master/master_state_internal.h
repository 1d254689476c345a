// Private parts of MasterState shared by its .cc files. Not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "master/master_state.h"

namespace mc::master {

struct MasterState::Segment {
  msg::SegmentDesc desc;
  msg::ClientId owner;
  SegmentAllocator allocator;
  Segment(msg::SegmentDesc d, msg::ClientId o)
      : desc(std::move(d)), owner(o), allocator(desc.size_bytes) {}
};

struct MasterState::Client {
  uint64_t last_ping_us = 0;
  std::vector<uint32_t> segments;  // ids of the segments it mounted
  // Registered by a ping, not by a mount: told to remount until it mounts.
  // A ping the network delivers late (sent before a partition, retransmitted
  // from a closed socket after the heal) may be the one that registers it,
  // and its reply is lost: the next pings must still ask.
  bool remount_pending = false;
};

// An upsert's new version: written by `owner`, readable at its PutEnd.
struct MasterState::Pending {
  ObjectRecord rec;  // deadline_us: when the put times out
  msg::ClientId owner;
};

// A removed or replaced version whose tracked reads may still be released.
struct MasterState::Held {
  std::string key;
  std::vector<Retired> buffers;
  uint32_t readers = 0;    // counted reads not released yet
  bool ambiguous = false;  // a reader also read a newer version: ends by time
};

struct MasterState::Task {
  msg::TaskInfo info;            // created_unix_ms fixed; updated_* derived
  ObjectId object = 0;           // the version it copies; another one fails it
  std::string source;            // move: the segment whose replica leaves
  std::vector<std::string> targets;
  ObjectRecord placed;           // TaskStart's target replicas, being written
  uint64_t created_us = 0;
  uint64_t deadline_us = 0;      // not started / ended by then: failed
  void Touch(uint64_t now_us) {
    info.updated_unix_ms = info.created_unix_ms + (now_us - created_us) / 1000;
  }
};

// "0123..." (32 hex digits) for messages.
std::string ClientName(const msg::ClientId& id);

}  // namespace mc::master

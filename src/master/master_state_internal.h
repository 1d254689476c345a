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
};

// "0123..." (32 hex digits) for messages.
std::string ClientName(const msg::ClientId& id);

}  // namespace mc::master

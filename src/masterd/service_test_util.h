// Test helpers for the MasterService unit tests. Not thread-safe.
#pragma once

#include <string>

#include "msg/messages.h"

namespace mc::masterd::testing {

// A 64 MiB segment of client {1, 2}, incarnation 9, signing with `key`.
inline msg::MountSegmentRequest Mount(const char* name, const std::string& key) {
  msg::MountSegmentRequest m;
  m.client = {1, 2};
  m.segment.name = name;
  m.segment.endpoint = "127.0.0.1:1";
  m.segment.size_bytes = 64ull << 20;
  m.segment.incarnation = 9;
  m.segment.access_key = key;
  return m;
}

}  // namespace mc::masterd::testing

// The segment descriptor a store publishes to the metadata server under
// mooncake/ram/<name>, in the reference transfer engine's JSON layout, for
// reference peers (mooncake's own clients learn segments from the master).
// Pure function, thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "msg/messages.h"

namespace mc::store {

// {"name":..,"protocol":"tcp","tcp_data_port":..,"buffers":[{"name":..,
// "addr":..,"length":..,"rkey":[],"lkey":[]}],"devices":[]}; the name is
// JSON-escaped, so any bytes in it give a document that parses back to it
// (tests/fuzz/descriptor_fuzz).
std::string SegmentDescriptorJson(const msg::SegmentDesc& seg, uint16_t port, uint64_t addr);

}  // namespace mc::store

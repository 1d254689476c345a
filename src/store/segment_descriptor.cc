#include "store/segment_descriptor.h"

#include "common/json_escape.h"

namespace mc::store {

std::string SegmentDescriptorJson(const msg::SegmentDesc& seg, uint16_t port, uint64_t addr) {
  return "{\"name\":\"" + JsonEscape(seg.name) + "\",\"protocol\":\"tcp\",\"tcp_data_port\":" +
         std::to_string(port) + ",\"buffers\":[{\"name\":\"" + JsonEscape(seg.name) +
         "\",\"addr\":" + std::to_string(addr) + ",\"length\":" + std::to_string(seg.size_bytes) +
         ",\"rkey\":[],\"lkey\":[]}],\"devices\":[]}";
}

}  // namespace mc::store

// libFuzzer target for the JSON segment descriptor a store stores in the
// metadata server (store/segment_descriptor.cc, escaping by
// common/json_escape.cc). mooncake itself never reads these documents back
// (its clients learn segments from the master); reference transfer-engine
// peers do, so any segment name, port, address and size must give a
// well-formed document that parses back, with our JSON reader, to exactly
// those fields: no name can inject keys or break the document.
// Input: u16 port | u64 addr | u64 size | name bytes.
// Run: tests/fuzz/run_fuzz.sh descriptor_fuzz.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "config/json_reader.h"
#include "store/segment_descriptor.h"

using namespace mc;
using Kind = config::JsonValue::Kind;

namespace {

const config::JsonValue& Member(const config::JsonValue& obj, const char* key, Kind kind) {
  auto it = obj.members.find(key);
  if (it == obj.members.end() || it->second.kind != kind) {
    std::fprintf(stderr, "descriptor lacks \"%s\" of the right kind\n", key);
    std::abort();
  }
  return it->second;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 18) return 0;
  uint16_t port;
  uint64_t addr, length;
  std::memcpy(&port, data, 2);
  std::memcpy(&addr, data + 2, 8);
  std::memcpy(&length, data + 10, 8);
  msg::SegmentDesc seg;
  seg.name.assign(reinterpret_cast<const char*>(data + 18), size - 18);
  seg.size_bytes = length;
  const std::string json = store::SegmentDescriptorJson(seg, port, addr);
  auto doc = config::ParseJson(json);
  if (!doc.ok()) {
    std::fprintf(stderr, "descriptor is not JSON (%s): %s\n", doc.status().ToString().c_str(),
                 json.c_str());
    std::abort();
  }
  if (doc->kind != Kind::kObject || doc->members.size() != 5) std::abort();
  if (Member(*doc, "name", Kind::kString).text != seg.name) std::abort();
  if (Member(*doc, "protocol", Kind::kString).text != "tcp") std::abort();
  if (Member(*doc, "tcp_data_port", Kind::kNumber).text != std::to_string(port)) std::abort();
  if (!Member(*doc, "devices", Kind::kArray).items.empty()) std::abort();
  const auto& buffers = Member(*doc, "buffers", Kind::kArray);
  if (buffers.items.size() != 1 || buffers.items[0].kind != Kind::kObject) std::abort();
  const auto& buf = buffers.items[0];
  if (buf.members.size() != 5) std::abort();
  if (Member(buf, "name", Kind::kString).text != seg.name) std::abort();
  if (Member(buf, "addr", Kind::kNumber).text != std::to_string(addr)) std::abort();
  if (Member(buf, "length", Kind::kNumber).text != std::to_string(length)) std::abort();
  if (!Member(buf, "rkey", Kind::kArray).items.empty()) std::abort();
  if (!Member(buf, "lkey", Kind::kArray).items.empty()) std::abort();
  return 0;
}

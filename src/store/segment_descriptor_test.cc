// The descriptor a store publishes for reference transfer-engine peers: the
// reference's JSON layout, and names that cannot break it.
#include "store/segment_descriptor.h"

#include <doctest/doctest.h>

#include <string>

#include "config/json_reader.h"

namespace mc::store {
namespace {

using Kind = config::JsonValue::Kind;

const config::JsonValue& Member(const config::JsonValue& obj, const std::string& key) {
  auto it = obj.members.find(key);
  REQUIRE_MESSAGE(it != obj.members.end(), "no member " << key);
  return it->second;
}

config::JsonValue Parse(const std::string& json) {
  auto doc = config::ParseJson(json);
  REQUIRE_MESSAGE(doc.ok(), json);
  return *doc;
}

}  // namespace

TEST_CASE("the descriptor names the segment, its port, address and length") {
  msg::SegmentDesc seg;
  seg.name = "10.1.2.3:7001";
  seg.size_bytes = 1ull << 30;
  const auto doc = Parse(SegmentDescriptorJson(seg, 7001, 0x7f0000001000ull));
  CHECK(Member(doc, "name").text == seg.name);
  CHECK(Member(doc, "protocol").text == "tcp");
  CHECK(Member(doc, "tcp_data_port").text == "7001");
  CHECK(Member(doc, "devices").items.empty());
  const auto& buffers = Member(doc, "buffers");
  REQUIRE(buffers.items.size() == 1);
  const auto& buf = buffers.items[0];
  CHECK(Member(buf, "name").text == seg.name);
  CHECK(Member(buf, "addr").text == std::to_string(0x7f0000001000ull));
  CHECK(Member(buf, "length").text == std::to_string(seg.size_bytes));
  CHECK(Member(buf, "rkey").kind == Kind::kArray);
  CHECK(Member(buf, "lkey").kind == Kind::kArray);
}

TEST_CASE("a segment name with quotes, backslashes and control bytes parses back to itself") {
  msg::SegmentDesc seg;
  seg.name = "a\"},\"protocol\":\"rdma\\\n\x01\x7f";
  const auto doc = Parse(SegmentDescriptorJson(seg, 1, 2));
  CHECK(doc.members.size() == 5);
  CHECK(Member(doc, "name").text == seg.name);
  CHECK(Member(doc, "protocol").text == "tcp");
}

}  // namespace mc::store

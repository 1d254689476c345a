#include "transfer/rdma/rdma_desc.h"

#include <doctest/doctest.h>

using namespace mc;
using namespace mc::transfer;

namespace {

RdmaSegmentDesc TwoNicDesc() {
  RdmaSegmentDesc d;
  d.name = "10.0.0.1:12345";
  Gid g{};
  g[10] = 0xff;
  g[11] = 0xff;
  g[12] = 192;
  g[15] = 1;
  d.devices.push_back({"mlx5_0", 0, g, 5});
  g[15] = 2;
  d.devices.push_back({"mlx5_1", 7, g, 3});
  d.buffers.push_back({d.name, 0x10000, 4096, {11, 21}, {12, 22}});
  d.buffers.push_back({d.name, 0x11000, 100, {13, 23}, {14, 24}});
  return d;
}

}  // namespace

TEST_CASE("a descriptor survives encoding and decoding") {
  RdmaSegmentDesc d = TwoNicDesc();
  auto back = DecodeDescriptor(EncodeDescriptor(d));
  REQUIRE(back.ok());
  CHECK(back->name == d.name);
  REQUIRE(back->devices.size() == 2);
  CHECK(back->devices[1].name == "mlx5_1");
  CHECK(back->devices[1].lid == 7);
  CHECK(back->devices[1].gid == d.devices[1].gid);
  CHECK(back->devices[0].mtu == 5);
  REQUIRE(back->buffers.size() == 2);
  CHECK(back->buffers[1].addr == 0x11000);
  CHECK(back->buffers[1].rkey == std::vector<uint32_t>{13, 23});
  CHECK(back->buffers[1].lkey == std::vector<uint32_t>{14, 24});
}

TEST_CASE("every truncation of a descriptor is refused, never misread") {
  std::string bytes = EncodeDescriptor(TwoNicDesc());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = DecodeDescriptor(std::string_view(bytes).substr(0, n));
    CHECK_MESSAGE(r.code() == ErrorCode::PROTOCOL_ERROR, "length " << n);
  }
  CHECK(DecodeDescriptor(bytes + "x").code() == ErrorCode::PROTOCOL_ERROR);
}

TEST_CASE("a descriptor with overlapping buffers or too many devices is refused, one with gaps is not") {
  RdmaSegmentDesc d = TwoNicDesc();
  d.buffers[1].addr -= 1;
  CHECK(DecodeDescriptor(EncodeDescriptor(d)).code() == ErrorCode::PROTOCOL_ERROR);
  // A p2p engine's registered regions lie apart; FindRemote sees the gap.
  d = TwoNicDesc();
  d.buffers[1].addr += 4096;
  auto gapped = DecodeDescriptor(EncodeDescriptor(d));
  REQUIRE(gapped.ok());
  CHECK(FindRemote(*gapped, d.buffers[1].addr - 1, 1).code() == ErrorCode::INVALID_READ);
  CHECK(FindRemote(*gapped, d.buffers[1].addr, 1).ok());
  d = TwoNicDesc();
  while (d.devices.size() <= kMaxRdmaDevices) d.devices.push_back(d.devices[0]);
  auto r = DecodeDescriptor(EncodeDescriptor(d));
  CHECK(r.code() == ErrorCode::PROTOCOL_ERROR);
  CHECK(r.status().message().find("devices") != std::string::npos);
}

TEST_CASE("the published JSON has the reference's fields") {
  std::string j = DescriptorJson(TwoNicDesc(), 12345);
  CHECK(j.find("\"protocol\":\"rdma\"") != std::string::npos);
  CHECK(j.find("\"devices\":[{\"name\":\"mlx5_0\",\"lid\":0,\"gid\":\"00:00:00:00:00:00:00:00:00:00:ff:ff:c0:00:00:01\"}") !=
        std::string::npos);
  CHECK(j.find("{\"name\":\"10.0.0.1:12345\",\"addr\":65536,\"length\":4096,\"rkey\":[11,21],\"lkey\":[12,22]}") !=
        std::string::npos);
  CHECK(j.find("\"tcp_data_port\":12345") != std::string::npos);
}

TEST_CASE("a remote range is found in the buffer holding its start, cut at its end") {
  RdmaSegmentDesc d = TwoNicDesc();
  auto a = FindRemote(d, 0x10000 + 4000, 500);
  REQUIRE(a.ok());
  CHECK(a->buffer == 0);
  CHECK(a->len == 96);
  auto b = FindRemote(d, 0x11000 + 10, 50);
  REQUIRE(b.ok());
  CHECK(b->buffer == 1);
  CHECK(b->len == 50);
  CHECK(!FindRemote(d, 0x11000 + 100, 1).ok());
  CHECK(!FindRemote(d, 0xffff, 1).ok());
}

TEST_CASE("connect requests and replies round-trip and bound their QP count") {
  RdmaConnectRequest q;
  q.device = 1;
  q.lid = 9;
  q.gid[3] = 4;
  q.mtu = 3;
  q.qps = {{100, 7}, {101, 8}};
  auto back = DecodeConnectRequest(EncodeConnectRequest(q));
  REQUIRE(back.ok());
  CHECK(back->device == 1);
  CHECK(back->gid == q.gid);
  REQUIRE(back->qps.size() == 2);
  CHECK(back->qps[1].qpn == 101);
  CHECK(back->qps[1].psn == 8);
  q.qps.assign(kMaxQpsPerPeer + 1, {1, 1});
  CHECK(DecodeConnectRequest(EncodeConnectRequest(q)).code() == ErrorCode::PROTOCOL_ERROR);
  RdmaConnectReply r{{{5, 6}}};
  auto rb = DecodeConnectReply(EncodeConnectReply(r));
  REQUIRE(rb.ok());
  CHECK(rb->qps[0].qpn == 5);
  CHECK(DecodeConnectReply("").code() == ErrorCode::PROTOCOL_ERROR);
}

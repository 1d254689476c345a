// The RDMA segment descriptor and the connection handshake, as data.
//
// A descriptor says how to reach a segment over RDMA, in the reference
// transfer engine's shape: its buffers (the segment cut into memory regions
// no larger than each NIC's max_mr_size; `rkey[i]`/`lkey[i]` are the keys on
// `devices[i]`) and its devices (name, LID, GID). It is published as JSON
// under mooncake/ram/<segment> on the metadata server (DescriptorJson) and
// handed to clients, binary-encoded, over the store's data port after they
// authenticate (data_protocol.h, op 4 RDMA_DESCRIBE).
//
// The handshake (op 5 RDMA_CONNECT, on the same data-port connection) pairs
// one client NIC with one store NIC: the client sends its port address and
// the QPNs/PSNs of its new RC QPs; the store creates as many QPs, connects
// them and answers with theirs. The store's QPs live as long as that TCP
// connection.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "transfer/rdma/verbs.h"

namespace mc::transfer {

// Named bounds of what a peer may send (checked when decoding).
inline constexpr size_t kMaxRdmaDevices = 16;
inline constexpr size_t kMaxRdmaDescBuffers = 4096;
inline constexpr size_t kMaxQpsPerPeer = 16;
inline constexpr size_t kMaxRdmaNameBytes = 64;

struct RdmaBufferDesc {
  std::string name;
  uint64_t addr = 0;
  uint64_t length = 0;
  std::vector<uint32_t> rkey;  // one per device, in devices' order
  std::vector<uint32_t> lkey;
};

struct RdmaDeviceDesc {
  std::string name;
  uint16_t lid = 0;
  Gid gid{};
  uint32_t mtu = 0;  // enum ibv_mtu of its active port
};

struct RdmaSegmentDesc {
  std::string name;
  std::vector<RdmaDeviceDesc> devices;
  // In address order, disjoint; contiguous for a store's segment, with gaps
  // between a p2p engine's registered regions.
  std::vector<RdmaBufferDesc> buffers;
};

// "00:00:...:ff:ff:c0:00:02:01", the reference's GID text.
std::string GidText(const Gid& gid);

// The reference's JSON (protocol "rdma"), plus our tcp_data_port.
std::string DescriptorJson(const RdmaSegmentDesc& desc, uint16_t tcp_data_port);

std::string EncodeDescriptor(const RdmaSegmentDesc& desc);
// PROTOCOL_ERROR naming what is malformed or over a bound.
Result<RdmaSegmentDesc> DecodeDescriptor(std::string_view bytes);

// Where [addr, addr + len) of the segment lies: the buffer holding addr and
// how many bytes of the range it holds. INVALID_READ when outside.
struct RemoteSpan {
  size_t buffer = 0;
  uint64_t len = 0;
};
Result<RemoteSpan> FindRemote(const RdmaSegmentDesc& desc, uint64_t addr, uint64_t len);

struct QpAddress {
  uint32_t qpn = 0;
  uint32_t psn = 0;
};

struct RdmaConnectRequest {
  uint16_t device = 0;  // index into the store's descriptor devices
  uint16_t lid = 0;     // the client NIC's port
  Gid gid{};
  uint32_t mtu = 0;
  std::vector<QpAddress> qps;
};

struct RdmaConnectReply {
  std::vector<QpAddress> qps;
};

std::string EncodeConnectRequest(const RdmaConnectRequest& r);
Result<RdmaConnectRequest> DecodeConnectRequest(std::string_view bytes);
std::string EncodeConnectReply(const RdmaConnectReply& r);
Result<RdmaConnectReply> DecodeConnectReply(std::string_view bytes);

}  // namespace mc::transfer

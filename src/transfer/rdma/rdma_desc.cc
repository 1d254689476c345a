#include "transfer/rdma/rdma_desc.h"

#include <cstdio>

#include "common/byte_io.h"
#include "common/json_escape.h"

namespace mc::transfer {

namespace {

Status Malformed(const std::string& what) {
  return Error(ErrorCode::PROTOCOL_ERROR, "malformed RDMA " + what);
}

void PutQps(ByteWriter& w, const std::vector<QpAddress>& qps) {
  w.U16(static_cast<uint16_t>(qps.size()));
  for (const auto& q : qps) {
    w.U32(q.qpn);
    w.U32(q.psn);
  }
}

bool GetQps(ByteReader& r, std::vector<QpAddress>* qps) {
  uint16_t n = r.U16("qp count");
  if (!r.ok() || n == 0 || n > kMaxQpsPerPeer) return false;
  qps->resize(n);
  for (auto& q : *qps) {
    q.qpn = r.U32("qpn");
    q.psn = r.U32("psn");
  }
  return r.ok();
}

}  // namespace

std::string GidText(const Gid& gid) {
  std::string s;
  char b[4];
  for (size_t i = 0; i < gid.size(); ++i) {
    std::snprintf(b, sizeof(b), "%02x", gid[i]);
    if (i > 0) s += ':';
    s += b;
  }
  return s;
}

std::string DescriptorJson(const RdmaSegmentDesc& desc, uint16_t tcp_data_port) {
  std::string j = "{\"name\":\"" + JsonEscape(desc.name) +
                  "\",\"protocol\":\"rdma\",\"tcp_data_port\":" + std::to_string(tcp_data_port) +
                  ",\"devices\":[";
  for (size_t i = 0; i < desc.devices.size(); ++i) {
    const auto& d = desc.devices[i];
    j += std::string(i ? "," : "") + "{\"name\":\"" + JsonEscape(d.name) +
         "\",\"lid\":" + std::to_string(d.lid) + ",\"gid\":\"" + GidText(d.gid) + "\"}";
  }
  j += "],\"buffers\":[";
  for (size_t i = 0; i < desc.buffers.size(); ++i) {
    const auto& b = desc.buffers[i];
    auto keys = [](const std::vector<uint32_t>& k) {
      std::string s = "[";
      for (size_t x = 0; x < k.size(); ++x) s += (x ? "," : "") + std::to_string(k[x]);
      return s + "]";
    };
    j += std::string(i ? "," : "") + "{\"name\":\"" + JsonEscape(b.name) +
         "\",\"addr\":" + std::to_string(b.addr) + ",\"length\":" + std::to_string(b.length) +
         ",\"rkey\":" + keys(b.rkey) + ",\"lkey\":" + keys(b.lkey) + "}";
  }
  return j + "]}";
}

std::string EncodeDescriptor(const RdmaSegmentDesc& desc) {
  std::string out;
  ByteWriter w(&out);
  w.Str16(desc.name);
  w.U16(static_cast<uint16_t>(desc.devices.size()));
  for (const auto& d : desc.devices) {
    w.Str16(d.name);
    w.U16(d.lid);
    w.Raw(d.gid.data(), d.gid.size());
    w.U32(d.mtu);
  }
  w.U32(static_cast<uint32_t>(desc.buffers.size()));
  for (const auto& b : desc.buffers) {
    w.Str16(b.name);
    w.U64(b.addr);
    w.U64(b.length);
    for (size_t i = 0; i < desc.devices.size(); ++i) {
      w.U32(i < b.rkey.size() ? b.rkey[i] : 0);
      w.U32(i < b.lkey.size() ? b.lkey[i] : 0);
    }
  }
  return out;
}

Result<RdmaSegmentDesc> DecodeDescriptor(std::string_view bytes) {
  ByteReader r(bytes);
  RdmaSegmentDesc d;
  r.Str16(&d.name, 512, "name");
  uint16_t ndev = r.U16("device count");
  if (!r.ok()) return Malformed("descriptor header");
  if (ndev == 0 || ndev > kMaxRdmaDevices) {
    return Malformed("descriptor: " + std::to_string(ndev) + " devices (1.." +
                     std::to_string(kMaxRdmaDevices) + ")");
  }
  d.devices.resize(ndev);
  for (auto& dev : d.devices) {
    r.Str16(&dev.name, kMaxRdmaNameBytes, "device name");
    dev.lid = r.U16("lid");
    r.Raw(dev.gid.data(), dev.gid.size(), "gid");
    dev.mtu = r.U32("mtu");
    if (!r.ok()) return Malformed("descriptor device");
  }
  uint32_t nbuf = r.U32("buffer count");
  if (!r.ok() || nbuf == 0 || nbuf > kMaxRdmaDescBuffers) {
    return Malformed("descriptor: buffer count out of 1.." + std::to_string(kMaxRdmaDescBuffers));
  }
  d.buffers.resize(nbuf);
  uint64_t next = 0;
  for (size_t i = 0; i < nbuf; ++i) {
    auto& b = d.buffers[i];
    r.Str16(&b.name, 512, "buffer name");
    b.addr = r.U64("addr");
    b.length = r.U64("length");
    if (!r.ok()) return Malformed("descriptor buffer");
    if (b.length == 0 || b.addr + b.length < b.addr || (i > 0 && b.addr < next)) {
      return Malformed("descriptor: buffer " + std::to_string(i) + " is empty or out of order");
    }
    next = b.addr + b.length;
    b.rkey.resize(ndev);
    b.lkey.resize(ndev);
    for (size_t k = 0; k < ndev; ++k) {
      b.rkey[k] = r.U32("rkey");
      b.lkey[k] = r.U32("lkey");
    }
    if (!r.ok()) return Malformed("descriptor keys");
  }
  if (!r.AtEnd()) return Malformed("descriptor: trailing bytes");
  return d;
}

Result<RemoteSpan> FindRemote(const RdmaSegmentDesc& desc, uint64_t addr, uint64_t len) {
  // Buffers are sorted and disjoint: binary search the one holding addr.
  size_t lo = 0, hi = desc.buffers.size();
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    const auto& b = desc.buffers[mid];
    if (addr < b.addr) hi = mid;
    else if (addr - b.addr >= b.length) lo = mid + 1;
    else {
      return RemoteSpan{mid, std::min(len, b.length - (addr - b.addr))};
    }
  }
  return Error(ErrorCode::INVALID_READ, "address " + std::to_string(addr) +
                                            " is outside segment " + desc.name);
}

std::string EncodeConnectRequest(const RdmaConnectRequest& q) {
  std::string out;
  ByteWriter w(&out);
  w.U16(q.device);
  w.U16(q.lid);
  w.Raw(q.gid.data(), q.gid.size());
  w.U32(q.mtu);
  PutQps(w, q.qps);
  return out;
}

Result<RdmaConnectRequest> DecodeConnectRequest(std::string_view bytes) {
  ByteReader r(bytes);
  RdmaConnectRequest q;
  q.device = r.U16("device");
  q.lid = r.U16("lid");
  r.Raw(q.gid.data(), q.gid.size(), "gid");
  q.mtu = r.U32("mtu");
  if (!r.ok() || !GetQps(r, &q.qps) || !r.AtEnd()) {
    return Malformed("connect request (QP count 1.." + std::to_string(kMaxQpsPerPeer) + ")");
  }
  return q;
}

std::string EncodeConnectReply(const RdmaConnectReply& q) {
  std::string out;
  ByteWriter w(&out);
  PutQps(w, q.qps);
  return out;
}

Result<RdmaConnectReply> DecodeConnectReply(std::string_view bytes) {
  ByteReader r(bytes);
  RdmaConnectReply q;
  if (!GetQps(r, &q.qps) || !r.AtEnd()) return Malformed("connect reply");
  return q;
}

}  // namespace mc::transfer

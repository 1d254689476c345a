#include "transfer/rdma/rdma_desc.h"

#include <cstdio>

#include "common/json_escape.h"

namespace mc::transfer {

namespace {

class Writer {
 public:
  void U8(uint8_t v) { s_.push_back(static_cast<char>(v)); }
  void U16(uint16_t v) { Le(v, 2); }
  void U32(uint32_t v) { Le(v, 4); }
  void U64(uint64_t v) { Le(v, 8); }
  void Str(const std::string& v) {
    U16(static_cast<uint16_t>(v.size()));
    s_ += v;
  }
  void Bytes(const Gid& g) { s_.append(reinterpret_cast<const char*>(g.data()), g.size()); }
  std::string Take() { return std::move(s_); }

 private:
  void Le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) s_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string s_;
};

class Reader {
 public:
  explicit Reader(std::string_view b) : b_(b) {}
  bool U8(uint8_t* v) { return Le(v, 1); }
  bool U16(uint16_t* v) { return Le(v, 2); }
  bool U32(uint32_t* v) { return Le(v, 4); }
  bool U64(uint64_t* v) { return Le(v, 8); }
  bool Str(std::string* v, size_t max) {
    uint16_t n = 0;
    if (!U16(&n) || n > max || b_.size() - pos_ < n) return false;
    v->assign(b_.substr(pos_, n));
    pos_ += n;
    return true;
  }
  bool Bytes(Gid* g) {
    if (b_.size() - pos_ < g->size()) return false;
    for (auto& x : *g) x = static_cast<uint8_t>(b_[pos_++]);
    return true;
  }
  bool AtEnd() const { return pos_ == b_.size(); }

 private:
  template <typename T>
  bool Le(T* v, int n) {
    if (b_.size() - pos_ < static_cast<size_t>(n)) return false;
    uint64_t x = 0;
    for (int i = 0; i < n; ++i) x |= uint64_t(static_cast<uint8_t>(b_[pos_ + i])) << (8 * i);
    pos_ += n;
    *v = static_cast<T>(x);
    return true;
  }
  std::string_view b_;
  size_t pos_ = 0;
};

Status Malformed(const std::string& what) {
  return Error(ErrorCode::PROTOCOL_ERROR, "malformed RDMA " + what);
}

void PutQps(Writer& w, const std::vector<QpAddress>& qps) {
  w.U16(static_cast<uint16_t>(qps.size()));
  for (const auto& q : qps) {
    w.U32(q.qpn);
    w.U32(q.psn);
  }
}

bool GetQps(Reader& r, std::vector<QpAddress>* qps) {
  uint16_t n = 0;
  if (!r.U16(&n) || n == 0 || n > kMaxQpsPerPeer) return false;
  qps->resize(n);
  for (auto& q : *qps) {
    if (!r.U32(&q.qpn) || !r.U32(&q.psn)) return false;
  }
  return true;
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
  Writer w;
  w.Str(desc.name);
  w.U16(static_cast<uint16_t>(desc.devices.size()));
  for (const auto& d : desc.devices) {
    w.Str(d.name);
    w.U16(d.lid);
    w.Bytes(d.gid);
    w.U32(d.mtu);
  }
  w.U32(static_cast<uint32_t>(desc.buffers.size()));
  for (const auto& b : desc.buffers) {
    w.Str(b.name);
    w.U64(b.addr);
    w.U64(b.length);
    for (size_t i = 0; i < desc.devices.size(); ++i) {
      w.U32(i < b.rkey.size() ? b.rkey[i] : 0);
      w.U32(i < b.lkey.size() ? b.lkey[i] : 0);
    }
  }
  return w.Take();
}

Result<RdmaSegmentDesc> DecodeDescriptor(std::string_view bytes) {
  Reader r(bytes);
  RdmaSegmentDesc d;
  uint16_t ndev = 0;
  if (!r.Str(&d.name, 512) || !r.U16(&ndev)) return Malformed("descriptor header");
  if (ndev == 0 || ndev > kMaxRdmaDevices) {
    return Malformed("descriptor: " + std::to_string(ndev) + " devices (1.." +
                     std::to_string(kMaxRdmaDevices) + ")");
  }
  d.devices.resize(ndev);
  for (auto& dev : d.devices) {
    if (!r.Str(&dev.name, kMaxRdmaNameBytes) || !r.U16(&dev.lid) || !r.Bytes(&dev.gid) ||
        !r.U32(&dev.mtu)) {
      return Malformed("descriptor device");
    }
  }
  uint32_t nbuf = 0;
  if (!r.U32(&nbuf) || nbuf == 0 || nbuf > kMaxRdmaDescBuffers) {
    return Malformed("descriptor: buffer count out of 1.." + std::to_string(kMaxRdmaDescBuffers));
  }
  d.buffers.resize(nbuf);
  uint64_t next = 0;
  for (size_t i = 0; i < nbuf; ++i) {
    auto& b = d.buffers[i];
    if (!r.Str(&b.name, 512) || !r.U64(&b.addr) || !r.U64(&b.length)) {
      return Malformed("descriptor buffer");
    }
    if (b.length == 0 || b.addr + b.length < b.addr || (i > 0 && b.addr != next)) {
      return Malformed("descriptor: buffer " + std::to_string(i) + " is empty or not contiguous");
    }
    next = b.addr + b.length;
    b.rkey.resize(ndev);
    b.lkey.resize(ndev);
    for (size_t k = 0; k < ndev; ++k) {
      if (!r.U32(&b.rkey[k]) || !r.U32(&b.lkey[k])) return Malformed("descriptor keys");
    }
  }
  if (!r.AtEnd()) return Malformed("descriptor: trailing bytes");
  return d;
}

Result<RemoteSpan> FindRemote(const RdmaSegmentDesc& desc, uint64_t addr, uint64_t len) {
  // Buffers are contiguous and sorted: binary search the one holding addr.
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
  Writer w;
  w.U16(q.device);
  w.U16(q.lid);
  w.Bytes(q.gid);
  w.U32(q.mtu);
  PutQps(w, q.qps);
  return w.Take();
}

Result<RdmaConnectRequest> DecodeConnectRequest(std::string_view bytes) {
  Reader r(bytes);
  RdmaConnectRequest q;
  if (!r.U16(&q.device) || !r.U16(&q.lid) || !r.Bytes(&q.gid) || !r.U32(&q.mtu) ||
      !GetQps(r, &q.qps) || !r.AtEnd()) {
    return Malformed("connect request (QP count 1.." + std::to_string(kMaxQpsPerPeer) + ")");
  }
  return q;
}

std::string EncodeConnectReply(const RdmaConnectReply& q) {
  Writer w;
  PutQps(w, q.qps);
  return w.Take();
}

Result<RdmaConnectReply> DecodeConnectReply(std::string_view bytes) {
  Reader r(bytes);
  RdmaConnectReply q;
  if (!GetQps(r, &q.qps) || !r.AtEnd()) return Malformed("connect reply");
  return q;
}

}  // namespace mc::transfer

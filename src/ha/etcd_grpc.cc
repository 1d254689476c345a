#include "ha/etcd_grpc.h"

#include <unistd.h>

#include <algorithm>

#include "net/socket.h"

namespace mc::ha {

namespace {

// ---- protobuf, by hand (wire types 0: varint, 2: length-delimited) ----

void Varint(std::string& out, uint64_t n) {
  while (n >= 0x80) {
    out += static_cast<char>((n & 0x7F) | 0x80);
    n >>= 7;
  }
  out += static_cast<char>(n);
}

void IntField(std::string& out, uint32_t field, int64_t n) {
  Varint(out, uint64_t{field} << 3);
  Varint(out, static_cast<uint64_t>(n));
}

void BytesField(std::string& out, uint32_t field, std::string_view bytes) {
  Varint(out, (uint64_t{field} << 3) | 2);
  Varint(out, bytes.size());
  out += bytes;
}

// etcdserverpb.Compare: result 1 (EQUAL = 0), target 2, key 3, then one of
// version 4, create_revision 5, mod_revision 6, value 7, lease 8.
std::string CompareMessage(const Compare& c) {
  // The target's enum value (VERSION 0, CREATE 1, MOD 2, VALUE 3, LEASE 4)
  // and the oneof field that carries what is compared.
  struct Shape {
    int64_t target;
    uint32_t field;
  };
  Shape shape{1, 5};
  switch (c.target) {
    case Compare::Target::kCreate: shape = {1, 5}; break;
    case Compare::Target::kMod: shape = {2, 6}; break;
    case Compare::Target::kValue: shape = {3, 7}; break;
    case Compare::Target::kLease: shape = {4, 8}; break;
  }
  std::string m;
  IntField(m, 1, 0);
  IntField(m, 2, shape.target);
  BytesField(m, 3, c.key);
  if (c.target == Compare::Target::kValue) {
    BytesField(m, shape.field, c.value);
  } else {
    IntField(m, shape.field, c.number);
  }
  return m;
}

// etcdserverpb.RequestOp: request_put 2 (PutRequest: key 1, value 2,
// lease 3) or request_delete_range 3 (key 1, range_end 2).
std::string OpMessage(const TxnOp& op) {
  std::string inner;
  BytesField(inner, 1, op.key);
  if (op.kind == TxnOp::Kind::kPut) {
    BytesField(inner, 2, op.value);
    if (op.lease != 0) IntField(inner, 3, op.lease);
  } else if (!op.range_end.empty()) {
    BytesField(inner, 2, op.range_end);
  }
  std::string m;
  BytesField(m, op.kind == TxnOp::Kind::kPut ? 2 : 3, inner);
  return m;
}

class ProtoReader {
 public:
  explicit ProtoReader(std::string_view bytes) : in_(bytes) {}
  bool done() const { return pos_ >= in_.size(); }
  bool ok() const { return ok_; }
  // The next field's number and wire type; false at the end or on an error.
  bool Next(uint32_t* field, uint32_t* wire) {
    if (done() || !ok_) return false;
    const uint64_t key = Varint();
    *field = static_cast<uint32_t>(key >> 3);
    *wire = static_cast<uint32_t>(key & 7);
    return ok_;
  }
  uint64_t Varint() {
    uint64_t n = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= in_.size()) break;
      const auto b = static_cast<uint8_t>(in_[pos_++]);
      n |= uint64_t{b & 0x7Fu} << shift;
      if ((b & 0x80) == 0) return n;
    }
    ok_ = false;
    return 0;
  }
  std::string_view Bytes() {
    const uint64_t n = Varint();
    if (!ok_ || n > in_.size() - pos_) {
      ok_ = false;
      return {};
    }
    std::string_view out = in_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  void Skip(uint32_t wire) {
    switch (wire) {
      case 0: (void)Varint(); break;
      case 1: Advance(8); break;
      case 2: (void)Bytes(); break;
      case 5: Advance(4); break;
      default: ok_ = false;
    }
  }

 private:
  void Advance(size_t n) {
    if (n > in_.size() - pos_) ok_ = false;
    else pos_ += n;
  }
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// ---- HTTP/2 (RFC 9113), the little a unary gRPC call needs ----

constexpr uint8_t kData = 0x0, kHeaders = 0x1, kRstStream = 0x3, kSettings = 0x4, kPing = 0x6,
                  kGoAway = 0x7, kWindowUpdate = 0x8;
constexpr uint8_t kEndStream = 0x1, kAck = 0x1, kEndHeaders = 0x4, kPadded = 0x8;
constexpr uint16_t kSettingsInitialWindow = 0x4, kSettingsMaxFrame = 0x5;
constexpr int64_t kDefaultWindow = 65535;
// What we let the server send before we grant more (per stream and, raised
// once at the start, for the connection).
constexpr int64_t kOurWindow = 1 << 30;
constexpr size_t kMaxFrameIn = 1u << 24;  // the protocol's ceiling
constexpr uint32_t kLastStreamId = (1u << 31) - 1;
constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

void Frame(std::string& out, uint8_t type, uint8_t flags, uint32_t stream,
           std::string_view payload) {
  const size_t n = payload.size();
  out += static_cast<char>(n >> 16);
  out += static_cast<char>(n >> 8);
  out += static_cast<char>(n);
  out += static_cast<char>(type);
  out += static_cast<char>(flags);
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>(stream >> shift);
  out += payload;
}

std::string Be32(uint32_t n) {
  return {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
          static_cast<char>(n)};
}

uint32_t ReadBe32(std::string_view b) {
  return (uint32_t{static_cast<uint8_t>(b[0])} << 24) |
         (uint32_t{static_cast<uint8_t>(b[1])} << 16) |
         (uint32_t{static_cast<uint8_t>(b[2])} << 8) | uint32_t{static_cast<uint8_t>(b[3])};
}

// An HPACK "literal header field without indexing, new name", lengths
// below 127 (no Huffman).
void Header(std::string& out, std::string_view name, std::string_view value) {
  out += '\0';
  out += static_cast<char>(name.size());
  out += name;
  out += static_cast<char>(value.size());
  out += value;
}

Status Fail(const std::string& what) { return Error(ErrorCode::RPC_FAIL, "etcd gRPC: " + what); }

}  // namespace

std::string EncodeTxnRequest(const Txn& txn) {
  std::string m;
  for (const Compare& c : txn.compare) BytesField(m, 1, CompareMessage(c));
  for (const TxnOp& op : txn.success) BytesField(m, 2, OpMessage(op));
  for (const TxnOp& op : txn.failure) BytesField(m, 3, OpMessage(op));
  return m;
}

std::string EncodeRangeRequest(const std::string& key, const std::string& range_end,
                               int64_t limit) {
  std::string m;
  BytesField(m, 1, key);
  if (!range_end.empty()) BytesField(m, 2, range_end);
  if (limit != 0) IntField(m, 3, limit);
  return m;
}

namespace {

// Calls on(field, wire, reader) for each field of the message in `bytes`;
// `on` reads the field's value, or returns false and the field is skipped.
// false when the message is malformed.
template <typename F>
bool ForEachField(std::string_view bytes, F on) {
  ProtoReader r(bytes);
  uint32_t field = 0, wire = 0;
  while (r.Next(&field, &wire)) {
    if (!on(field, wire, r)) r.Skip(wire);
  }
  return r.ok();
}

int64_t Int(ProtoReader& r) { return static_cast<int64_t>(r.Varint()); }

}  // namespace

Result<RangeResult> DecodeRangeResponse(std::string_view bytes) {
  RangeResult out;
  bool kvs_ok = true;
  const bool ok = ForEachField(bytes, [&](uint32_t field, uint32_t wire, ProtoReader& r) {
    if (field == 2 && wire == 2) {  // mvccpb.KeyValue
      KeyValue one;
      const std::string_view body = r.Bytes();
      kvs_ok &= ForEachField(body, [&](uint32_t f, uint32_t w, ProtoReader& kv) {
        if (f == 1 && w == 2) one.key = kv.Bytes();
        else if (f == 2 && w == 0) one.create_revision = Int(kv);
        else if (f == 3 && w == 0) one.mod_revision = Int(kv);
        else if (f == 5 && w == 2) one.value = kv.Bytes();
        else if (f == 6 && w == 0) one.lease = Int(kv);
        else return false;
        return true;
      });
      out.kvs.push_back(std::move(one));
      return true;
    }
    if (field == 3 && wire == 0) {
      out.more = r.Varint() != 0;
      return true;
    }
    return false;
  });
  if (!ok || !kvs_ok) return Error(ErrorCode::PROTOCOL_ERROR, "etcd gRPC: bad RangeResponse");
  return out;
}

Result<TxnResult> DecodeTxnResponse(std::string_view bytes) {
  TxnResult out;
  bool header_ok = true;
  const bool ok = ForEachField(bytes, [&](uint32_t field, uint32_t wire, ProtoReader& r) {
    if (field == 1 && wire == 2) {  // ResponseHeader: revision 3
      const std::string_view body = r.Bytes();
      header_ok &= ForEachField(body, [&](uint32_t f, uint32_t w, ProtoReader& h) {
        if (f != 3 || w != 0) return false;
        out.revision = Int(h);
        return true;
      });
      return true;
    }
    if (field == 2 && wire == 0) {
      out.succeeded = r.Varint() != 0;
      return true;
    }
    return false;
  });
  if (!header_ok) return Error(ErrorCode::PROTOCOL_ERROR, "etcd gRPC: bad response header");
  if (!ok) return Error(ErrorCode::PROTOCOL_ERROR, "etcd gRPC: bad TxnResponse");
  return out;
}

namespace {

struct InFrame {
  uint8_t type = 0;
  uint8_t flags = 0;
  uint32_t stream = 0;
  std::string payload;
};

// One call's stream as the server's frames move it along.
struct StreamState {
  uint32_t id = 0;
  int64_t send_window = 0;
  std::string data;  // the reply's DATA, gRPC length prefix included
  bool ended = false;
};

uint32_t Be24(std::string_view b) {
  return uint32_t{static_cast<uint8_t>(b[0])} << 16 | uint32_t{static_cast<uint8_t>(b[1])} << 8 |
         uint32_t{static_cast<uint8_t>(b[2])};
}

}  // namespace

struct EtcdGrpc::Conn {
  int fd = -1;
  std::string authority;
  std::string in;  // read, not yet parsed
  uint32_t next_stream = 1;
  int64_t send_window = kDefaultWindow;           // the connection's
  int64_t stream_initial_window = kDefaultWindow;  // the server's SETTINGS
  size_t max_frame = 16384;
  int64_t received = 0;  // DATA bytes since we last raised the connection window

  ~Conn() {
    if (fd >= 0) ::close(fd);
  }

  // The preface, our SETTINGS (every stream's window raised) and a
  // WINDOW_UPDATE raising the connection's, so replies need no further
  // grants for a long while.
  Status Hello(uint64_t deadline) {
    std::string settings(1, '\0');
    settings += static_cast<char>(kSettingsInitialWindow);
    settings += Be32(static_cast<uint32_t>(kOurWindow));
    std::string hello(kPreface, sizeof kPreface - 1);
    Frame(hello, kSettings, 0, 0, settings);
    Frame(hello, kWindowUpdate, 0, 0, Be32(static_cast<uint32_t>(kOurWindow - kDefaultWindow)));
    return net::WriteAll(fd, hello, deadline);
  }

  Result<InFrame> ReadFrame(uint64_t deadline) {
    while (in.size() < 9 || in.size() < 9 + Be24(in)) {
      char buf[16384];
      MC_ASSIGN_OR_RETURN(size_t n, net::ReadSome(fd, buf, sizeof buf, deadline));
      if (n == 0) return Fail(authority + " closed the connection");
      in.append(buf, n);
    }
    const size_t len = Be24(in);
    if (len > kMaxFrameIn) return Fail("frame too large");
    InFrame f{.type = static_cast<uint8_t>(in[3]),
              .flags = static_cast<uint8_t>(in[4]),
              .stream = ReadBe32(std::string_view(in).substr(5, 4)) & kLastStreamId,
              .payload = in.substr(9, len)};
    in.erase(0, 9 + len);
    return f;
  }

  void Settings(const std::string& payload, StreamState& s) {
    for (size_t i = 0; i + 6 <= payload.size(); i += 6) {
      const auto id = static_cast<uint16_t>(static_cast<uint8_t>(payload[i]) << 8 |
                                            static_cast<uint8_t>(payload[i + 1]));
      const uint32_t value = ReadBe32(std::string_view(payload).substr(i + 2, 4));
      if (id == kSettingsInitialWindow) {
        s.send_window += static_cast<int64_t>(value) - stream_initial_window;
        stream_initial_window = value;
      } else if (id == kSettingsMaxFrame) {
        max_frame = std::clamp<size_t>(value, 16384, kMaxFrameIn);
      }
    }
  }

  Status Data(const InFrame& f, StreamState& s, std::string& out) {
    if (f.stream == s.id) {
      std::string_view body = f.payload;
      if ((f.flags & kPadded) && !body.empty()) {
        const size_t pad = static_cast<uint8_t>(body[0]);
        if (pad + 1 > body.size()) return Fail("bad DATA padding");
        body = body.substr(1, body.size() - 1 - pad);
      }
      s.data += body;
      if (f.flags & kEndStream) s.ended = true;
    }
    received += static_cast<int64_t>(f.payload.size());
    if (received >= kOurWindow / 2) {
      Frame(out, kWindowUpdate, 0, 0, Be32(static_cast<uint32_t>(received)));
      received = 0;
    }
    return Status::Ok();
  }

  // Handles one frame from the server while stream `s` is open.
  Status Handle(const InFrame& f, StreamState& s, uint64_t deadline) {
    std::string out;
    switch (f.type) {
      case kSettings:
        if (f.flags & kAck) break;
        Settings(f.payload, s);
        Frame(out, kSettings, kAck, 0, {});
        break;
      case kPing:
        if (!(f.flags & kAck)) Frame(out, kPing, kAck, 0, f.payload);
        break;
      case kWindowUpdate:
        if (f.payload.size() == 4) {
          const int64_t inc = ReadBe32(f.payload) & 0x7FFFFFFF;
          if (f.stream == 0) send_window += inc;
          if (f.stream == s.id) s.send_window += inc;
        }
        break;
      case kGoAway:
        return Fail(authority + " sent GOAWAY");
      case kRstStream:
        if (f.stream == s.id) return Fail(authority + " reset the call");
        break;
      case kData:
        MC_RETURN_IF_ERROR(Data(f, s, out));
        break;
      case kHeaders:
        if (f.stream == s.id && (f.flags & kEndStream)) s.ended = true;
        break;
      default:
        break;  // CONTINUATION, PRIORITY, PUSH_PROMISE (never enabled): nothing to do
    }
    return out.empty() ? Status::Ok() : net::WriteAll(fd, out, deadline);
  }

  // Sends the request on stream `s` (HEADERS, then DATA within the flow
  // control windows).
  Status Send(std::string_view path, const std::string& message, StreamState& s,
              uint64_t deadline) {
    std::string headers;
    Header(headers, ":method", "POST");
    Header(headers, ":scheme", "http");
    Header(headers, ":path", path);
    Header(headers, ":authority", authority);
    Header(headers, "content-type", "application/grpc");
    Header(headers, "te", "trailers");
    std::string out;
    Frame(out, kHeaders, kEndHeaders, s.id, headers);
    std::string body(1, '\0');
    body += Be32(static_cast<uint32_t>(message.size()));
    body += message;
    size_t sent = 0;
    while (sent < body.size()) {
      const int64_t window = std::min(send_window, s.send_window);
      if (window <= 0) {  // wait for the server's WINDOW_UPDATE
        MC_RETURN_IF_ERROR(net::WriteAll(fd, out, deadline));
        out.clear();
        MC_ASSIGN_OR_RETURN(InFrame f, ReadFrame(deadline));
        MC_RETURN_IF_ERROR(Handle(f, s, deadline));
        if (s.ended) return Fail(authority + " ended the call before its request");
        continue;
      }
      const size_t n = std::min({body.size() - sent, max_frame, static_cast<size_t>(window)});
      Frame(out, kData, sent + n == body.size() ? kEndStream : 0, s.id,
            std::string_view(body).substr(sent, n));
      sent += n;
      send_window -= static_cast<int64_t>(n);
      s.send_window -= static_cast<int64_t>(n);
    }
    return net::WriteAll(fd, out, deadline);
  }
};

EtcdGrpc::EtcdGrpc(std::unique_ptr<EtcdHttp> gateway, EtcdHttpOptions options)
    : gateway_(std::move(gateway)), options_(options) {}

EtcdGrpc::~EtcdGrpc() = default;

Result<std::unique_ptr<EtcdGrpc>> EtcdGrpc::Open(std::string_view endpoints,
                                                 EtcdHttpOptions options) {
  MC_ASSIGN_OR_RETURN(std::unique_ptr<EtcdHttp> gateway, EtcdHttp::Open(endpoints, options));
  return std::unique_ptr<EtcdGrpc>(new EtcdGrpc(std::move(gateway), options));
}

EtcdGrpc::Stats EtcdGrpc::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

bool EtcdGrpc::UseGateway(bool must) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failures_in_a_row_ >= kGrpcFailuresBeforeGateway) {
    failures_in_a_row_ = 0;
    must = true;
  }
  if (must) ++stats_.gateway_calls;
  return must;
}

template <typename T>
Result<T> EtcdGrpc::Unary(std::string_view path, const std::string& message,
                          Result<T> (*decode)(std::string_view)) {
  std::lock_guard<std::mutex> lock(mu_);
  auto reply = Call(path, message);
  auto result = reply.ok() ? decode(*reply) : Result<T>(reply.status());
  if (result.ok()) {
    failures_in_a_row_ = 0;
    ++stats_.grpc_calls;
    return result;
  }
  // The next call starts afresh on the next member.
  conn_.reset();
  current_ = (current_ + 1) % gateway_->endpoints().size();
  ++failures_in_a_row_;
  ++stats_.grpc_failures;
  return Error(ErrorCode::RPC_FAIL, result.status().message());
}

Result<TxnResult> EtcdGrpc::Commit(const Txn& txn) {
  const auto has_range = [](const std::vector<TxnOp>& ops) {
    return std::any_of(ops.begin(), ops.end(),
                       [](const TxnOp& op) { return op.kind == TxnOp::Kind::kRange; });
  };
  if (UseGateway(has_range(txn.success) || has_range(txn.failure))) return gateway_->Commit(txn);
  return Unary<TxnResult>("/etcdserverpb.KV/Txn", EncodeTxnRequest(txn), DecodeTxnResponse);
}

Result<RangeResult> EtcdGrpc::Range(const std::string& key, const std::string& range_end,
                                    int64_t limit) {
  if (UseGateway(false)) return gateway_->Range(key, range_end, limit);
  return Unary<RangeResult>("/etcdserverpb.KV/Range", EncodeRangeRequest(key, range_end, limit),
                            DecodeRangeResponse);
}

Result<std::string> EtcdGrpc::Call(std::string_view path, const std::string& message) {
  if (const uint64_t now = net::MonotonicUs(); now >= next_leader_check_us_) {
    next_leader_check_us_ = now + kRaftLeaderCheckUs;
    auto leader = gateway_->RaftLeaderEndpoint();
    if (leader.ok() && *leader != current_) {
      current_ = *leader;
      conn_.reset();
    }
  }
  const uint64_t deadline = net::MonotonicUs() + options_.request_timeout_us;
  if (conn_ == nullptr || conn_->next_stream > kLastStreamId) {
    conn_.reset();
    const std::string& member = gateway_->endpoints()[current_];
    MC_ASSIGN_OR_RETURN(net::HostPort hp, net::ParseHostPort(member));
    auto fd = net::ConnectTcp(hp, options_.connect_timeout_us);
    if (!fd.ok()) return Fail(member + ": " + fd.status().message());
    conn_ = std::make_unique<Conn>();
    conn_->fd = *fd;
    conn_->authority = member;
    MC_RETURN_IF_ERROR(conn_->Hello(deadline));
  }
  Conn& c = *conn_;
  StreamState s{.id = c.next_stream, .send_window = c.stream_initial_window};
  c.next_stream += 2;
  MC_RETURN_IF_ERROR(c.Send(path, message, s, deadline));
  while (!s.ended) {
    MC_ASSIGN_OR_RETURN(InFrame f, c.ReadFrame(deadline));
    MC_RETURN_IF_ERROR(c.Handle(f, s, deadline));
  }
  // One message: flag byte (no compression), length, bytes. No message:
  // a trailers-only reply, an error whose status we do not decode.
  if (s.data.size() < 5 || s.data[0] != 0) return Fail(c.authority + " answered with an error");
  const uint32_t len = ReadBe32(std::string_view(s.data).substr(1, 4));
  if (len != s.data.size() - 5) {
    return Fail("reply of " + std::to_string(s.data.size()) + " bytes");
  }
  return s.data.substr(5);
}

}  // namespace mc::ha

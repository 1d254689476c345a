#include "transfer/tcp_transport.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <deque>
#include <optional>

#include "common/byte_io.h"
#include "common/log.h"
#include "transfer/data_protocol.h"

namespace mc::transfer {

namespace {

bool IsSealedRead(const TransferOp& op) { return op.kind == OpKind::kRead && op.sealed; }

std::string PeerKey(const Endpoint& ep) { return ep.host + ":" + std::to_string(ep.port); }

// Reads the error message that follows a failed reply and builds its Status.
Status ReadErrorReply(net::Stream fd, const wire::Reply& reply, const std::string& peer) {
  std::string msg(std::min<uint64_t>(reply.length, wire::kMaxErrorMessageBytes), '\0');
  if (reply.length > wire::kMaxErrorMessageBytes ||
      !net::RecvAll(fd, msg.data(), msg.size()).ok()) {
    msg = "(unreadable message)";
  }
  ErrorCode code = IsKnownErrorCode(reply.status) ? static_cast<ErrorCode>(reply.status)
                                                  : ErrorCode::TRANSFER_FAIL;
  if (code == ErrorCode::OK) code = ErrorCode::TRANSFER_FAIL;
  return Error(code, peer + ": " + msg);
}

Status ReadReply(net::Stream fd, uint64_t request_id, const std::string& peer, wire::Reply* reply) {
  uint8_t hdr[wire::kReplyBytes];
  MC_RETURN_IF_ERROR(net::RecvAll(fd, hdr, sizeof(hdr)));
  MC_RETURN_IF_ERROR(wire::DecodeReply(hdr, reply));
  if (reply->status != 0) return ReadErrorReply(fd, *reply, peer);
  if (reply->request_id != request_id) {
    return Error(ErrorCode::PROTOCOL_ERROR, peer + ": reply to request " +
                                                std::to_string(reply->request_id) +
                                                ", expected " + std::to_string(request_id));
  }
  return Status::Ok();
}

// Reads the server's greeting: HELLO, or an error reply when it refuses us.
Status ReadHello(net::Stream fd, const std::string& peer, wire::Hello* hello) {
  uint8_t buf[wire::kHelloBytes];
  MC_RETURN_IF_ERROR(net::RecvAll(fd, buf, wire::kReplyBytes));
  wire::Reply reply;
  if (wire::DecodeReply(buf, &reply).ok()) return ReadErrorReply(fd, reply, peer);
  MC_RETURN_IF_ERROR(
      net::RecvAll(fd, buf + wire::kReplyBytes, wire::kHelloBytes - wire::kReplyBytes));
  return wire::DecodeHello(buf, hello);
}

// A send or receive that made no progress for io_timeout_us: the peer is
// partitioned or stalled, not merely closing an idle connection (which fails
// at once, with a reset or an end of stream). A failed connect says the same
// and is noted where Acquire fails.
bool PeerGone(const Status& st) {
  return st.code() == ErrorCode::RPC_TIMEOUT;
}

}  // namespace

void TcpTransport::Unreachable::Note(const Endpoint& ep, const Status& st) {
  // A refusal (a wrong token, a full server) is an answer: the peer is there.
  if (st.code() != ErrorCode::TRANSFER_FAIL && st.code() != ErrorCode::RPC_TIMEOUT) return;
  std::lock_guard<std::mutex> lock(mu_);
  peers_.try_emplace(PeerKey(ep), st);
}

Status TcpTransport::Unreachable::Check(const Endpoint& ep) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = peers_.find(PeerKey(ep));
  return it == peers_.end() ? Status::Ok() : it->second;
}

TcpTransport::TcpTransport(TcpTransportOptions options)
    : options_(std::move(options)), workers_(std::max(options_.streams - 1, 0)) {
  assert(options_.streams >= 1 && options_.streams <= static_cast<int>(kMaxTcpStreams));
  assert(options_.min_chunk_bytes > 0 && options_.min_chunk_bytes <= options_.max_chunk_bytes);
  assert(options_.min_read_chunk_bytes > 0);
}

TcpTransport::~TcpTransport() { CloseIdle(); }

void TcpTransport::CloseConn(Conn& c) {
  net::SslFree()(c.ssl);  // SSL_free(nullptr) is a no-op
  c.ssl = nullptr;
  close(c.fd);
  c.fd = -1;
}

void TcpTransport::CloseIdle() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [peer, conns] : idle_) {
    for (Conn& c : conns) CloseConn(c);
  }
  idle_.clear();
}

void TcpTransport::DropIdle(const Endpoint& ep) {
  std::vector<Conn> dead;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = idle_.find(PeerKey(ep));
    if (it == idle_.end()) return;
    dead.swap(it->second);
  }
  for (Conn& c : dead) CloseConn(c);
}

Result<net::Stream> ConnectDataPort(const Endpoint& ep, const std::string& auth_token,
                                    uint64_t connect_timeout_us, const net::SocketTuning& tuning,
                                    const net::TlsContext* tls) {
  const std::string peer = PeerKey(ep);
  auto connected = net::ConnectTcp({ep.host, ep.port}, connect_timeout_us);
  if (!connected.ok()) {
    // The data plane reports its own code; net names what failed.
    return Error(ErrorCode::TRANSFER_FAIL, "connect " + ep.host + ":" + std::to_string(ep.port) +
                                               ": " + connected.status().message());
  }
  const int fd = *connected;
  net::TuneSocket(fd, tuning);
  net::Stream conn(fd, nullptr);
  if (tls != nullptr) {
    auto ssl = net::TlsHandshake(*tls, fd, ep.host, net::MonotonicUs() + connect_timeout_us);
    if (!ssl.ok()) {
      close(fd);
      return Error(ssl.code() == ErrorCode::PROTOCOL_ERROR ? ErrorCode::PROTOCOL_ERROR
                                                           : ErrorCode::TRANSFER_FAIL,
                   "store " + peer + ": " + ssl.status().message());
    }
    conn.ssl = ssl->release();
  }
  wire::Hello hello;
  Status st = ReadHello(conn, peer, &hello);
  if (st.ok() && (hello.flags & wire::kFlagAuthRequired)) {
    if (auth_token.empty()) {
      st = Error(ErrorCode::AUTH_FAILED, peer + " requires a transfer token and none is set");
    } else {
      auto mac = wire::AuthMac(auth_token, hello.nonce);
      wire::Request req;
      req.op = static_cast<uint16_t>(wire::Op::kAuth);
      req.request_id = kAuthRequestId;
      req.length = wire::kMacBytes;
      uint8_t hdr[wire::kRequestBytes];
      wire::EncodeRequest(req, hdr);
      iovec iov[2] = {{hdr, sizeof(hdr)}, {mac.data(), mac.size()}};
      st = net::SendAllV(conn, iov, 2);
      wire::Reply reply;
      if (st.ok()) st = ReadReply(conn, req.request_id, peer, &reply);
    }
  }
  if (!st.ok()) {
    CloseStream(conn);
    return st;
  }
  return conn;
}

void CloseStream(net::Stream s) {
  net::SslFree()(s.ssl);  // SSL_free(nullptr) is a no-op
  if (s.fd >= 0) close(s.fd);
}

Result<std::string> DataPortCall(net::Stream fd, const std::string& peer, uint16_t op,
                                 uint64_t request_id, std::string_view payload,
                                 size_t max_reply_bytes) {
  wire::Request req;
  req.op = op;
  req.request_id = request_id;
  req.length = payload.size();
  uint8_t hdr[wire::kRequestBytes];
  wire::EncodeRequest(req, hdr);
  iovec iov[2] = {{hdr, sizeof(hdr)}, {const_cast<char*>(payload.data()), payload.size()}};
  MC_RETURN_IF_ERROR(net::SendAllV(fd, iov, payload.empty() ? 1 : 2));
  wire::Reply reply;
  MC_RETURN_IF_ERROR(ReadReply(fd, request_id, peer, &reply));
  if (reply.length > max_reply_bytes) {
    return Error(ErrorCode::PROTOCOL_ERROR, peer + ": reply of " + std::to_string(reply.length) +
                                                " bytes exceeds " + std::to_string(max_reply_bytes));
  }
  std::string out(reply.length, '\0');
  MC_RETURN_IF_ERROR(net::RecvAll(fd, out.data(), out.size()));
  return out;
}

Result<TcpTransport::Conn> TcpTransport::Connect(const Endpoint& ep) {
  MC_ASSIGN_OR_RETURN(net::Stream s,
                      ConnectDataPort(ep, options_.auth_token, options_.connect_timeout_us,
                                      options_.tuning, options_.tls.get()));
  // The AUTH request used id kAuthRequestId; data requests follow it.
  return Conn{s.fd, s.ssl, kAuthRequestId + 1, false};
}

Result<TcpTransport::Conn> TcpTransport::Acquire(const Endpoint& ep) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = idle_.find(PeerKey(ep));
    if (it != idle_.end() && !it->second.empty()) {
      Conn c = it->second.back();
      it->second.pop_back();
      c.reused = true;
      return c;
    }
  }
  return Connect(ep);
}

void TcpTransport::Release(const Endpoint& ep, Conn conn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& conns = idle_[PeerKey(ep)];
    if (static_cast<int>(conns.size()) < options_.max_idle_connections_per_peer) {
      conns.push_back(conn);
      return;
    }
  }
  CloseConn(conn);
}

uint64_t TcpTransport::EncodeChunk(Conn& conn, const TransferOp& op, const Chunk& chunk,
                                   uint8_t hdr[wire::kRequestBytes]) {
  wire::Request req;
  req.op = static_cast<uint16_t>(op.kind == OpKind::kWrite ? wire::Op::kWrite
                                : op.sealed                ? wire::Op::kReadSealed
                                                           : wire::Op::kRead);
  req.request_id = conn.next_request_id++;
  req.offset = op.remote_offset + chunk.offset_in_op;
  req.length = chunk.len;
  // Every chunk carries the whole buffer's grant; the store checks the chunk
  // lies inside it. A signature of the wrong size is sent as zeros (refused).
  SetRequestGrant(op.grant, &req);
  wire::EncodeRequest(req, hdr);
  return req.request_id;
}

Status TcpTransport::SendChunk(Conn& conn, const TransferOp& op, const Chunk& chunk,
                               uint64_t* request_id) {
  const bool is_write = op.kind == OpKind::kWrite;
  uint8_t* local = static_cast<uint8_t*>(op.buffer) + chunk.offset_in_op;
  uint8_t hdr[wire::kRequestBytes];
  *request_id = EncodeChunk(conn, op, chunk, hdr);
  // Header and payload leave in one sendmsg; the payload is the caller's
  // buffer itself, never copied.
  uint8_t seal[wire::kSealBytes];
  iovec iov[2] = {{hdr, sizeof(hdr)}, {local, is_write ? chunk.len : 0}};
  if (IsSealedRead(op)) {
    StoreLe64(seal, op.seal);
    iov[1] = {seal, sizeof seal};
    return net::SendAllV(conn.stream(), iov, 2);
  }
  return net::SendAllV(conn.stream(), iov, is_write && chunk.len > 0 ? 2 : 1);
}

Status TcpTransport::FinishChunk(Conn& conn, const TransferOp& op, const Chunk& chunk,
                                 uint64_t request_id, bool* broken) {
  const std::string peer = PeerKey(*op.endpoint);
  const bool is_write = op.kind == OpKind::kWrite;
  *broken = true;
  wire::Reply reply;
  Status st = ReadReply(conn.stream(), request_id, peer, &reply);
  if (!st.ok()) {
    // A well-formed error reply leaves the connection usable.
    *broken = st.code() == ErrorCode::TRANSFER_FAIL || st.code() == ErrorCode::RPC_TIMEOUT ||
              st.code() == ErrorCode::PROTOCOL_ERROR;
    return st;
  }
  const uint64_t seal_bytes = IsSealedRead(op) ? wire::kSealBytes : 0;
  const uint64_t expect = is_write ? 0 : seal_bytes + chunk.len;
  if (reply.length != expect) {
    return Error(ErrorCode::PROTOCOL_ERROR, peer + ": reply carries " +
                                                std::to_string(reply.length) + " bytes, expected " +
                                                std::to_string(expect));
  }
  if (seal_bytes > 0) {
    uint8_t seal[wire::kSealBytes];
    MC_RETURN_IF_ERROR(net::RecvAll(conn.stream(), seal, sizeof seal));
    // The op's only chunk (sealed reads are never cut): no other writer.
    const_cast<TransferOp&>(op).seal = LoadLe64(seal);
  }
  if (!is_write) {
    MC_RETURN_IF_ERROR(
        net::RecvAll(conn.stream(), static_cast<uint8_t*>(op.buffer) + chunk.offset_in_op, chunk.len));
  }
  *broken = false;
  return Status::Ok();
}

Status TcpTransport::RunChunk(Conn& conn, const TransferOp& op, const Chunk& chunk, bool* broken) {
  uint64_t id = 0;
  *broken = true;
  MC_RETURN_IF_ERROR(SendChunk(conn, op, chunk, &id));
  return FinishChunk(conn, op, chunk, id, broken);
}

Status TcpTransport::RunChunkWithRetry(const TransferOp& op, const Chunk& chunk,
                                       Unreachable* gone) {
  Status st;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (Status down = gone->Check(*op.endpoint); !down.ok()) return down;
    auto conn = Acquire(*op.endpoint);
    if (!conn.ok()) {
      gone->Note(*op.endpoint, conn.status());
      return conn.status();
    }
    bool broken = false;
    st = RunChunk(*conn, op, chunk, &broken);
    if (!broken) {
      Release(*op.endpoint, *conn);
      return st;
    }
    CloseConn(*conn);
    // Only a pooled connection may have died while idle; a fresh one failing
    // is a real error. One dead pooled connection usually means the peer
    // restarted, so its other idle ones go too. A timeout is no idle
    // connection closing: the peer is partitioned or stalled.
    if (PeerGone(st)) {
      gone->Note(*op.endpoint, st);
      DropIdle(*op.endpoint);
      break;
    }
    if (!conn->reused) break;
    DropIdle(*op.endpoint);
  }
  return st;
}

namespace {

// Replies of a pipelined window are read through a buffer (see
// net::BufferedReader).
using net::BufferedReader;

// Reads one reply of a pipelined window. OK: op's status is set (an error
// reply is a status, the connection stays usable). An error: the connection
// is broken.
Status ReadPipelinedReply(BufferedReader& in, TransferOp& op, uint64_t request_id,
                          const std::string& peer) {
  uint8_t hdr[wire::kReplyBytes];
  MC_RETURN_IF_ERROR(in.Read(hdr, sizeof(hdr)));
  wire::Reply reply;
  MC_RETURN_IF_ERROR(wire::DecodeReply(hdr, &reply));
  if (reply.request_id != request_id) {
    return Error(ErrorCode::PROTOCOL_ERROR, peer + ": reply to request " +
                                                std::to_string(reply.request_id) +
                                                ", expected " + std::to_string(request_id));
  }
  if (reply.status != 0) {
    if (reply.length > wire::kMaxErrorMessageBytes) {
      return Error(ErrorCode::PROTOCOL_ERROR, peer + ": error message too long");
    }
    std::string msg(reply.length, '\0');
    MC_RETURN_IF_ERROR(in.Read(msg.data(), msg.size()));
    ErrorCode code = IsKnownErrorCode(reply.status) ? static_cast<ErrorCode>(reply.status)
                                                    : ErrorCode::TRANSFER_FAIL;
    if (code == ErrorCode::OK) code = ErrorCode::TRANSFER_FAIL;
    op.status = Error(code, peer + ": " + msg);
    return Status::Ok();
  }
  const uint64_t seal_bytes = IsSealedRead(op) ? wire::kSealBytes : 0;
  const uint64_t expect = op.kind == OpKind::kWrite ? 0 : seal_bytes + op.len;
  if (reply.length != expect) {
    return Error(ErrorCode::PROTOCOL_ERROR, peer + ": reply carries " +
                                                std::to_string(reply.length) + " bytes, expected " +
                                                std::to_string(expect));
  }
  if (seal_bytes > 0) {
    uint8_t seal[wire::kSealBytes];
    MC_RETURN_IF_ERROR(in.Read(seal, sizeof seal));
    op.seal = LoadLe64(seal);
  }
  if (op.len > 0 && op.kind == OpKind::kRead) MC_RETURN_IF_ERROR(in.Read(op.buffer, op.len));
  op.status = Status::Ok();
  return Status::Ok();
}

}  // namespace

size_t TcpTransport::RunWindow(Conn& conn, std::span<TransferOp> ops,
                               const std::vector<size_t>& group, size_t first, size_t n,
                               Unreachable* gone) {
  assert(n <= kPipelineWindowOps);
  const Endpoint& ep = *ops[group[first]].endpoint;
  uint8_t hdrs[kPipelineWindowOps][wire::kRequestBytes];
  uint8_t seals[kPipelineWindowOps][wire::kSealBytes];
  uint64_t ids[kPipelineWindowOps];
  iovec iov[2 * kPipelineWindowOps];
  int iovcnt = 0;
  for (size_t j = 0; j < n; ++j) {
    TransferOp& op = ops[group[first + j]];
    ids[j] = EncodeChunk(conn, op, Chunk{group[first + j], 0, op.len}, hdrs[j]);
    iov[iovcnt++] = {hdrs[j], wire::kRequestBytes};
    if (op.kind == OpKind::kWrite && op.len > 0) iov[iovcnt++] = {op.buffer, op.len};
    if (IsSealedRead(op)) {
      StoreLe64(seals[j], op.seal);
      iov[iovcnt++] = {seals[j], wire::kSealBytes};
    }
  }
  Status st = net::SendAllV(conn.stream(), iov, iovcnt);
  size_t done = 0;
  if (st.ok()) {
    BufferedReader in(conn.stream());
    const std::string peer = PeerKey(ep);
    for (; done < n; ++done) {
      st = ReadPipelinedReply(in, ops[group[first + done]], ids[done], peer);
      if (!st.ok()) break;
    }
    if (st.ok() && in.buffered()) {
      st = Error(ErrorCode::PROTOCOL_ERROR, peer + ": bytes past the last reply");
      done = 0;  // which reply was wrong is unknown: redo the window
    }
  }
  if (!st.ok()) {
    if (PeerGone(st)) gone->Note(ep, st);
    if (conn.reused || PeerGone(st)) DropIdle(ep);
    CloseConn(conn);
  }
  return done;
}

void TcpTransport::RunPipelined(std::span<TransferOp> ops, const std::vector<size_t>& group,
                                Unreachable* gone) {
  const Endpoint& ep = *ops[group[0]].endpoint;
  size_t first = 0;
  auto conn = Acquire(ep);
  if (!conn.ok()) {
    // As on the striped path: a peer that cannot be reached, or refuses us
    // (a wrong token, too many connections), fails its ops without retries.
    gone->Note(ep, conn.status());
    for (size_t i : group) ops[i].status = conn.status();
    return;
  }
  while (first < group.size()) {
    const size_t n = std::min(kPipelineWindowOps, group.size() - first);
    const size_t done = RunWindow(*conn, ops, group, first, n, gone);
    first += done;
    if (done < n) break;  // the connection is closed
  }
  if (first == group.size()) Release(ep, *conn);
  // What a broken connection left undone goes one by one, with the usual
  // retry on a fresh connection (WRITE and READ are idempotent).
  for (; first < group.size(); ++first) {
    TransferOp& op = ops[group[first]];
    op.status = RunChunkWithRetry(op, Chunk{group[first], 0, op.len}, gone);
  }
}

void TcpTransport::RunStream(std::span<TransferOp> ops, const std::vector<Chunk>& chunks,
                             std::atomic<size_t>* next, const ChunkFailed& failed,
                             Unreachable* gone) {
  struct Pending {
    size_t chunk;
    uint64_t request_id;
  };
  std::optional<Conn> conn;
  const Endpoint* ep = nullptr;
  std::deque<Pending> pending;
  std::vector<size_t> retry;  // chunks caught on a connection that broke
  auto drop_conn = [&] {
    for (const Pending& p : pending) retry.push_back(p.chunk);
    pending.clear();
    if (conn->reused) DropIdle(*ep);
    CloseConn(*conn);
    conn.reset();
  };
  auto complete_oldest = [&] {
    Pending p = pending.front();
    pending.pop_front();
    bool broken = false;
    const Chunk& c = chunks[p.chunk];
    Status st = FinishChunk(*conn, ops[c.op], c, p.request_id, &broken);
    if (broken) {
      if (PeerGone(st)) gone->Note(*ep, st);
      retry.push_back(p.chunk);
      drop_conn();
    } else if (!st.ok()) {
      failed(p.chunk, st);
    }
  };
  auto flush = [&] {
    while (conn && !pending.empty()) complete_oldest();
    if (conn) Release(*ep, *conn);
    conn.reset();
  };
  for (size_t i = next->fetch_add(1); i < chunks.size(); i = next->fetch_add(1)) {
    const TransferOp& op = ops[chunks[i].op];
    if (conn && (ep->host != op.endpoint->host || ep->port != op.endpoint->port)) flush();
    if (Status down = gone->Check(*op.endpoint); !down.ok()) {
      failed(i, down);
      continue;
    }
    if (!conn) {
      auto c = Acquire(*op.endpoint);
      if (!c.ok()) {
        gone->Note(*op.endpoint, c.status());
        failed(i, c.status());
        continue;
      }
      conn = *c;
      ep = op.endpoint;
    }
    uint64_t id = 0;
    if (Status sent = SendChunk(*conn, op, chunks[i], &id); !sent.ok()) {
      if (PeerGone(sent)) gone->Note(*ep, sent);
      retry.push_back(i);
      drop_conn();
      continue;
    }
    pending.push_back({i, id});
    if (pending.size() >= kPipelineDepth) complete_oldest();
  }
  flush();
  for (size_t i : retry) {
    Status st = RunChunkWithRetry(ops[chunks[i].op], chunks[i], gone);
    if (!st.ok()) failed(i, st);
  }
}

Status TcpTransport::PipelinedBatch(std::span<TransferOp> ops) {
  uint64_t total = 0;
  for (const TransferOp& op : ops) {
    if (op.len > kPipelinedOpBytes) return Error(ErrorCode::NOT_SUPPORTED, "large op");
    total += op.len;
  }
  if (ops.empty() || total > kPipelinedBatchBytes) {
    return Error(ErrorCode::NOT_SUPPORTED, "large batch");
  }
  // One group per peer, ops in batch order.
  std::vector<std::vector<size_t>> groups;
  std::map<std::string, size_t> group_of;
  for (size_t i = 0; i < ops.size(); ++i) {
    ops[i].status = Status::Ok();
    auto [it, added] = group_of.try_emplace(PeerKey(*ops[i].endpoint), groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  Unreachable gone;
  std::atomic<size_t> next{0};
  auto run = [&](size_t) {
    for (size_t g = next.fetch_add(1); g < groups.size(); g = next.fetch_add(1)) {
      RunPipelined(ops, groups[g], &gone);
    }
  };
  const size_t streams = std::min<size_t>(static_cast<size_t>(options_.streams), groups.size());
  if (streams == 1) run(0);
  else workers_.ParallelFor(streams, static_cast<int>(streams) - 1, run);
  for (TransferOp& op : ops) {
    op.peer_unreachable = !op.status.ok() && !gone.Check(*op.endpoint).ok();
  }
  for (const TransferOp& op : ops) {
    if (!op.status.ok()) return op.status;
  }
  return Status::Ok();
}

Status TcpTransport::Batch(std::span<TransferOp> ops) {
  MC_RETURN_IF_ERROR(ValidateBatch(ops));
  if (Status st = PipelinedBatch(ops); st.code() != ErrorCode::NOT_SUPPORTED) return st;
  std::vector<Chunk> chunks;
  for (size_t i = 0; i < ops.size(); ++i) {
    ops[i].status = Status::Ok();
    const uint64_t len = ops[i].len;
    const uint64_t min_piece = std::min(ops[i].kind == OpKind::kRead
                                            ? options_.min_read_chunk_bytes
                                            : options_.min_chunk_bytes,
                                        options_.max_chunk_bytes);
    uint64_t piece = (len + options_.streams - 1) / options_.streams;
    piece = std::clamp(piece, min_piece, options_.max_chunk_bytes);
    // One seal proves one range: a sealed read is never cut.
    if (IsSealedRead(ops[i])) piece = std::max<uint64_t>(len, 1);
    uint64_t off = 0;
    do {
      uint64_t n = std::min(piece, len - off);
      chunks.push_back({i, off, n});
      off += n;
    } while (off < len);
  }
  std::mutex err_mu;
  ChunkFailed failed = [&](size_t c, const Status& st) {
    std::lock_guard<std::mutex> lock(err_mu);
    if (ops[chunks[c].op].status.ok()) ops[chunks[c].op].status = st;
  };
  std::atomic<size_t> next{0};
  Unreachable gone;
  const size_t streams = std::min<size_t>(static_cast<size_t>(options_.streams), chunks.size());
  workers_.ParallelFor(streams, static_cast<int>(streams) - 1,
                       [&](size_t) { RunStream(ops, chunks, &next, failed, &gone); });
  for (TransferOp& op : ops) {
    op.peer_unreachable = !op.status.ok() && !gone.Check(*op.endpoint).ok();
  }
  for (const TransferOp& op : ops) {
    if (!op.status.ok()) return op.status;
  }
  return Status::Ok();
}

}  // namespace mc::transfer

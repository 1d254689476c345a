#include "dataserver/tcp_server.h"

#include "transfer/rdma/rdma_desc.h"
#include "transfer/rdma/rdma_responder.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <openssl/ssl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "common/capability.h"
#include "common/byte_io.h"
#include "common/log.h"
#include "transfer/access.h"

namespace mc::transfer {

struct TcpDataServer::Counters {
  std::atomic<uint64_t> tls_failures{0};
  std::atomic<uint64_t> accepted{0}, refused{0}, served{0}, refused_requests{0},
      protocol_errors{0}, auth_failures{0}, bytes_written{0}, bytes_read{0},
      rdma_connects{0}, sealed_reads{0}, stale_reads{0}, retires{0};
};

namespace {

constexpr size_t kDrainChunkBytes = 256 << 10;
// Connections the kernel completes before the accept loop takes them. Each
// client opens up to `streams` (8) connections per store at once, so 64
// clients starting together send 512 SYNs; past the backlog the kernel drops
// them and the client's connect waits out a 1 s SYN retransmit, long enough
// for a put's write grant to expire. Linux caps it at net.core.somaxconn.
constexpr int kListenBacklog = 1024;
constexpr int kReapIntervalMs = 1000;

// How long a TLS data server waits for a client's first byte. A TLS client
// sends its ClientHello at once; a plaintext one waits for our Hello, so
// silence this long means a plaintext client, which is then told TLS is
// required in a reply it can read.
constexpr int kTlsFirstByteWaitMs = 2000;

std::string PeerName(net::Stream s) {
  const int fd = s.fd;
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  char ip[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof(ip));
  return std::string(ip) + ":" + std::to_string(ntohs(addr.sin_port));
}

// Replies with `st` (OK with `data_len` bytes to follow, or an error message).
Status SendReply(net::Stream fd, uint64_t request_id, const Status& st, const void* data,
                 uint64_t data_len) {
  wire::Reply reply;
  reply.status = static_cast<int32_t>(st.code());
  reply.request_id = request_id;
  std::string msg;
  iovec iov[2];
  uint8_t hdr[wire::kReplyBytes];
  iov[1] = {const_cast<void*>(data), data_len};
  if (!st.ok()) {
    msg = st.message().substr(0, wire::kMaxErrorMessageBytes);
    iov[1] = {msg.data(), msg.size()};
  }
  reply.length = iov[1].iov_len;
  wire::EncodeReply(reply, hdr);
  iov[0] = {hdr, sizeof(hdr)};
  return net::SendAllV(fd, iov, iov[1].iov_len > 0 ? 2 : 1);
}

}  // namespace

namespace {

// A blocking listening socket on an IPv4 literal (the accept loop polls it
// with the wake eventfd, then accepts).
Result<int> Listen(const TcpDataServerOptions& o) {
  in_addr addr{};
  if (inet_pton(AF_INET, o.listen_host.c_str(), &addr) != 1) {
    return Error(ErrorCode::INVALID_PARAMS,
                 "listen address '" + o.listen_host + "' is not an IPv4 literal");
  }
  auto fd = net::ListenTcp(o.listen_host, o.port, kListenBacklog);
  if (!fd.ok()) return Error(ErrorCode::INTERNAL_ERROR, fd.status().message());
  if (!net::SetNonBlocking(*fd, false)) {
    close(*fd);
    return Error(ErrorCode::INTERNAL_ERROR, std::string("fcntl: ") + std::strerror(errno));
  }
  return *fd;
}

}  // namespace

// One connection's I/O. Requests are read through a buffer, so one recv
// brings every request a pipelining client sent at once; replies are queued
// and leave in one sendmsg when no further request is already buffered (or
// the queue is full). Before anything that may block (a recv, a poll) the
// queue is flushed, so a client waiting for a reply is never kept waiting by
// the server waiting for it. On TLS nothing is buffered (OpenSSL buffers
// itself), and replies are sent one by one.
class TcpDataServer::ConnIo {
 public:
  static constexpr size_t kMaxQueued = 64;
  static constexpr uint64_t kMaxQueuedBytes = 1u << 20;

  explicit ConnIo(net::Stream s) : s_(s), in_(s) {}
  net::Stream stream() const { return s_; }
  // Bytes of requests already received and not yet read.
  bool buffered() const { return in_.buffered(); }

  // Reads `n` bytes of requests, flushing queued replies first if that may
  // block.
  Status Read(void* dst, size_t n) {
    if (!in_.HasBuffered(n)) MC_RETURN_IF_ERROR(Flush());
    return in_.Read(dst, n);
  }

  // Reads and discards `len` payload bytes of a refused WRITE.
  Status Drain(uint64_t len) {
    std::vector<uint8_t> scratch(std::min<uint64_t>(len, kDrainChunkBytes));
    while (len > 0) {
      size_t n = std::min<uint64_t>(len, scratch.size());
      MC_RETURN_IF_ERROR(Read(scratch.data(), n));
      len -= n;
    }
    return Status::Ok();
  }

  // Queues the reply with `st` (OK with `data_len` bytes from `data`, which
  // must stay valid until the flush, or an error message).
  Status Reply(uint64_t request_id, const Status& st, const void* data, uint64_t data_len) {
    if (n_ == kMaxQueued || queued_bytes_ + data_len > kMaxQueuedBytes) MC_RETURN_IF_ERROR(Flush());
    wire::Reply reply;
    reply.status = static_cast<int32_t>(st.code());
    reply.request_id = request_id;
    iovec body{const_cast<void*>(data), data_len};
    if (!st.ok()) {
      msgs_[n_] = st.message().substr(0, wire::kMaxErrorMessageBytes);
      body = {msgs_[n_].data(), msgs_[n_].size()};
    }
    reply.length = body.iov_len;
    wire::EncodeReply(reply, hdrs_[n_]);
    iov_[iovcnt_++] = {hdrs_[n_], wire::kReplyBytes};
    if (body.iov_len > 0) iov_[iovcnt_++] = body;
    queued_bytes_ += wire::kReplyBytes + body.iov_len;
    holds_segment_bytes_ |= st.ok() && data_len > 0;
    ++n_;
    // Send now unless another whole request header is already here, to be
    // answered in the same sendmsg.
    if (in_.passthrough() || !in_.HasBuffered(wire::kRequestBytes)) return Flush();
    return Status::Ok();
  }

  // A READ's fence pass, held until its queued reply (which points at
  // segment memory) has left.
  void HoldPass(TermFence::Pass pass) { passes_.push_back(std::move(pass)); }
  // Before entering the fence under `term`: passes of another term are
  // given up first (their replies flushed), or the entry could wait for them.
  Status ReleasePassesNotOf(uint64_t term) {
    for (const TermFence::Pass& p : passes_) {
      if (p.term() != term) return Flush();
    }
    return Status::Ok();
  }

  Status Flush() {
    if (iovcnt_ == 0) {
      passes_.clear();
      return Status::Ok();
    }
    Status st = net::SendAllV(s_, iov_, iovcnt_);
    passes_.clear();
    n_ = 0;
    iovcnt_ = 0;
    queued_bytes_ = 0;
    holds_segment_bytes_ = false;
    for (size_t i = 0; i < staged_; ++i) {
      if (staging_[i].capacity() > kMaxQueuedBytes) std::vector<uint8_t>().swap(staging_[i]);
    }
    staged_ = 0;
    return st;
  }

  // Before a WRITE lands: a queued READ reply points at segment memory, and
  // must carry the bytes as they were when it was served.
  Status BeforeSegmentWrite() { return holds_segment_bytes_ ? Flush() : Status::Ok(); }

  // `n` bytes that stay put until the next flush, for a reply of copied
  // bytes (a sealed read). Flushes first if queueing `n` more would, so the
  // buffer is not handed out again while a queued reply points at it.
  Result<uint8_t*> Stage(uint64_t n) {
    if (n_ == kMaxQueued || queued_bytes_ + n > kMaxQueuedBytes || staged_ == staging_.size()) {
      MC_RETURN_IF_ERROR(Flush());
    }
    if (staging_.size() < kMaxQueued) staging_.resize(kMaxQueued);
    std::vector<uint8_t>& b = staging_[staged_++];
    b.resize(n);
    return b.data();
  }

 private:
  net::Stream s_;
  net::BufferedReader in_;
  uint8_t hdrs_[kMaxQueued][wire::kReplyBytes];
  std::string msgs_[kMaxQueued];
  iovec iov_[2 * kMaxQueued];
  int iovcnt_ = 0;
  size_t n_ = 0;
  uint64_t queued_bytes_ = 0;
  bool holds_segment_bytes_ = false;
  std::vector<TermFence::Pass> passes_;        // of the queued READ replies
  std::vector<std::vector<uint8_t>> staging_;  // Stage()'s buffers
  size_t staged_ = 0;                          // handed out since the last flush
};

Result<std::unique_ptr<TcpDataServer>> TcpDataServer::Start(uint8_t* base, uint64_t size_bytes,
                                                            AccessCheck check,
                                                            TcpDataServerOptions options) {
  if (size_bytes == 0 || !check) {
    return Error(ErrorCode::INVALID_PARAMS, "data server needs memory and an access check");
  }
  if (options.max_connections == 0 || options.max_frame_bytes == 0) {
    return Error(ErrorCode::INVALID_PARAMS, "max_connections and max_frame_bytes must be > 0");
  }
  std::unique_ptr<TcpDataServer> s(new TcpDataServer());
  s->base_ = base;
  s->size_bytes_ = size_bytes;
  s->check_ = std::move(check);
  s->options_ = std::move(options);
  s->clock_ = s->options_.clock != nullptr ? s->options_.clock : &SystemClock::Instance();
  s->counters_ = std::make_unique<Counters>();
  MC_ASSIGN_OR_RETURN(s->listen_fd_, Listen(s->options_));
  s->port_ = net::LocalPort(s->listen_fd_);
  s->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s->wake_fd_ < 0) {
    return Error(ErrorCode::INTERNAL_ERROR, std::string("eventfd: ") + std::strerror(errno));
  }
  s->acceptor_ = std::thread([raw = s.get()] { raw->AcceptLoop(); });
  MC_LOG(INFO) << "transfer data server on " << s->options_.listen_host << ":" << s->port_
               << (s->options_.auth_token.empty() ? " (no auth" : " (token auth")
               << (s->options_.tls ? ", TLS)" : ")");
  return s;
}

TcpDataServer::~TcpDataServer() {
  Stop();
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

void TcpDataServer::Stop() {
  if (stopping_.exchange(true)) return;
  uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof(one)) < 0) {
    MC_LOG(WARN) << "eventfd write failed";
  }
  if (acceptor_.joinable()) acceptor_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Conn& c : conns_) shutdown(c.fd, SHUT_RDWR);
  }
  ReapFinished(/*all=*/true);
}

TcpDataServerStats TcpDataServer::stats() const {
  const Counters& c = *counters_;
  return {c.accepted.load(), c.refused.load(),         c.served.load(),
          c.refused_requests.load(), c.protocol_errors.load(), c.auth_failures.load(),
          c.bytes_written.load(), c.bytes_read.load(), c.tls_failures.load(),
          c.rdma_connects.load(), c.sealed_reads.load(), c.stale_reads.load(), c.retires.load()};
}

void TcpDataServer::ReapFinished(bool all) {
  std::list<Conn> finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = conns_.begin(); it != conns_.end();) {
      auto next = std::next(it);
      if (all || it->done.load()) finished.splice(finished.end(), conns_, it);
      it = next;
    }
  }
  // The fd is closed only here, after the join, so Stop() never shuts down a
  // descriptor number that was already reused.
  for (Conn& c : finished) {
    c.thread.join();
    close(c.fd);
  }
}

void TcpDataServer::AcceptLoop() {
  while (!stopping_.load()) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    int pr = poll(fds, 2, kReapIntervalMs);
    ReapFinished(false);
    if (pr <= 0 || !(fds[0].revents & POLLIN) || stopping_.load()) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS) {
        // Out of descriptors: the pending connection stays queued, so poll
        // would return at once; wait for Stop or the reap interval instead.
        MC_LOG(WARN) << "accept: " << std::strerror(errno);
        pollfd wake{wake_fd_, POLLIN, 0};
        poll(&wake, 1, kReapIntervalMs);
      }
      continue;
    }
    net::TuneSocket(fd, options_.tuning);
    std::lock_guard<std::mutex> lock(mu_);
    if (conns_.size() >= options_.max_connections) {
      counters_->refused.fetch_add(1);
      MC_LOG(WARN) << "refusing connection from " << PeerName(fd) << ": "
                   << options_.max_connections << " connections open";
      (void)SendReply(fd, 0,
                      Error(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                            "data server connection limit reached"),
                      nullptr, 0);
      close(fd);
      continue;
    }
    counters_->accepted.fetch_add(1);
    Conn& c = conns_.emplace_back();
    c.fd = fd;
    c.id = next_conn_id_++;
    c.thread = std::thread([this, &c] { Serve(&c); });
  }
}

void TcpDataServer::LogRefusal(net::Stream fd, OpKind op, const Status& st) {
  // A peer hammering the port with bad requests must not flood the log: at
  // most kMaxRefusalLogsPerWindow lines per window, then one line saying how
  // many were left out. The counter in stats() counts them all.
  const uint64_t now_ms = clock_->UnixMs();
  uint64_t suppressed = 0;
  {
    std::lock_guard<std::mutex> lock(log_mu_);
    if (now_ms >= refusal_window_start_ms_ + kRefusalLogWindowMs) {
      suppressed = refusals_suppressed_;
      refusal_window_start_ms_ = now_ms;
      refusals_logged_ = 0;
      refusals_suppressed_ = 0;
    }
    if (refusals_logged_ >= kMaxRefusalLogsPerWindow) {
      ++refusals_suppressed_;
      return;
    }
    ++refusals_logged_;
  }
  if (suppressed > 0) {
    MC_LOG(WARN) << suppressed << " more refused requests were not logged ("
                 << counters_->refused_requests.load() << " refused since start)";
  }
  MC_LOG(WARN) << "refused " << OpKindName(op) << " from " << PeerName(fd) << ": "
               << st.ToString();
}

bool TcpDataServer::Authenticate(net::Stream fd, const std::array<uint8_t, wire::kNonceBytes>& nonce) {
  uint8_t hdr[wire::kRequestBytes];
  wire::Request req;
  uint8_t mac[wire::kMacBytes];
  // A peer that hangs up before asking (e.g. a client that has no token) is
  // not an authentication attempt.
  if (!net::RecvAll(fd, hdr, sizeof(hdr)).ok()) return false;
  bool ok = wire::DecodeRequest(hdr, &req).ok() &&
            req.op == static_cast<uint16_t>(wire::Op::kAuth) && req.length == wire::kMacBytes &&
            net::RecvAll(fd, mac, sizeof(mac)).ok();
  if (ok) {
    auto want = wire::AuthMac(options_.auth_token, nonce);
    ok = wire::MacEqual(mac, want.data());
  }
  if (!ok) {
    counters_->auth_failures.fetch_add(1);
    MC_LOG(WARN) << "authentication failed for " << PeerName(fd);
    (void)SendReply(fd, req.request_id,
                    Error(ErrorCode::AUTH_FAILED, "transfer authentication failed"), nullptr, 0);
    return false;
  }
  return SendReply(fd, req.request_id, Status::Ok(), nullptr, 0).ok();
}

net::SslPtr TcpDataServer::AcceptTls(int fd) {
  pollfd pfd{fd, POLLIN, 0};
  int pr = poll(&pfd, 1, kTlsFirstByteWaitMs);
  unsigned char first[2];
  ssize_t n = pr > 0 ? recv(fd, first, sizeof first, MSG_PEEK) : -1;
  if (pr > 0 && n == 0) return nullptr;  // closed at once (a port probe)
  if (pr <= 0 || n < 0 || !net::LooksLikeTls(first, static_cast<size_t>(n))) {
    counters_->tls_failures.fetch_add(1);
    MC_LOG(WARN) << "refused a plaintext connection from " << PeerName(fd)
                 << ": this data port requires TLS ([tls] cert is set)";
    (void)SendReply(fd, 0,
                    Error(ErrorCode::PROTOCOL_ERROR,
                          "this store requires TLS and the client connected without it (give the "
                          "client --tls-ca, [tls] ca or MOONCAKE_TLS_CA)"),
                    nullptr, 0);
    return nullptr;
  }
  const uint64_t timeout_us = options_.tuning.io_timeout_us > 0 ? options_.tuning.io_timeout_us
                                                                : 10000000;
  auto ssl = net::TlsHandshake(*options_.tls, fd, "", net::MonotonicUs() + timeout_us);
  if (!ssl.ok()) {
    counters_->tls_failures.fetch_add(1);
    MC_LOG(WARN) << "TLS with " << PeerName(fd) << " failed: " << ssl.status().message();
    return nullptr;
  }
  return std::move(*ssl);
}

void TcpDataServer::Serve(Conn* conn) {
  net::SslPtr ssl;
  if (options_.tls != nullptr) {
    ssl = AcceptTls(conn->fd);
    if (!ssl) {
      shutdown(conn->fd, SHUT_RDWR);
      conn->done.store(true);
      return;
    }
  }
  const net::Stream fd(conn->fd, ssl.get());
  wire::Hello hello;
  hello.segment_bytes = size_bytes_;
  hello.flags = options_.auth_token.empty() ? 0 : wire::kFlagAuthRequired;
  uint8_t buf[wire::kHelloBytes];
  bool alive = wire::RandomNonce(&hello.nonce).ok();
  if (alive) {
    wire::EncodeHello(hello, buf);
    alive = net::SendAll(fd, buf, sizeof(buf)).ok();
  }
  if (alive && !options_.auth_token.empty()) alive = Authenticate(fd, hello.nonce);
  ConnIo io(fd);
  while (alive && !stopping_.load()) {
    // Bytes OpenSSL already decrypted are not in the socket for poll to see,
    // nor are requests already in our buffer.
    const bool buffered = io.buffered() || (ssl != nullptr && SSL_has_pending(ssl.get()) == 1);
    if (!buffered && !io.Flush().ok()) break;
    pollfd pfd{fd.fd, POLLIN, 0};
    int pr = buffered ? 1
                      : poll(&pfd, 1, options_.idle_timeout_ms > 0 ? options_.idle_timeout_ms : -1);
    if (pr == 0) {
      MC_LOG(DEBUG) << "closing idle connection from " << PeerName(fd);
      break;
    }
    uint8_t hdr[wire::kRequestBytes];
    wire::Request req;
    Status st = io.Read(hdr, sizeof(hdr));
    if (!st.ok()) break;  // peer closed or stalled: nothing to answer
    st = wire::DecodeRequest(hdr, &req);
    if (!st.ok() && ssl == nullptr && net::LooksLikeTls(hdr, sizeof hdr)) {
      counters_->tls_failures.fetch_add(1);
      MC_LOG(WARN) << "a client at " << PeerName(fd)
                   << " started TLS, but this data port has no TLS configured ([tls] cert)";
      break;
    }
    if (st.ok()) {
      alive = Handle(io, conn->id, req);
    } else {
      counters_->protocol_errors.fetch_add(1);
      MC_LOG(WARN) << "closing connection from " << PeerName(fd) << ": " << st.message();
      (void)io.Reply(0, st, nullptr, 0);
      alive = false;
    }
  }
  (void)io.Flush();  // answers queued before a close still go out
  if (options_.rdma != nullptr) options_.rdma->Release(conn->id);
  shutdown(fd.fd, SHUT_RDWR);
  conn->done.store(true);
}

bool TcpDataServer::HandleRdma(ConnIo& io, uint64_t conn_id, const wire::Request& req) {
  const net::Stream fd = io.stream();
  const bool connect = req.op == static_cast<uint16_t>(wire::Op::kRdmaConnect);
  const uint64_t max_len = connect ? wire::kMaxRdmaConnectBytes : 0;
  if (req.length > max_len) {
    counters_->protocol_errors.fetch_add(1);
    (void)io.Reply(req.request_id,
                   Error(ErrorCode::PROTOCOL_ERROR, "RDMA request of " +
                                                         std::to_string(req.length) + " bytes"),
                    nullptr, 0);
    return false;
  }
  std::string payload(req.length, '\0');
  if (!io.Read(payload.data(), payload.size()).ok()) return false;
  if (options_.rdma == nullptr) {
    return io.Reply(req.request_id,
                    Error(ErrorCode::NOT_SUPPORTED, "this store serves no RDMA (protocol tcp)"),
                    nullptr, 0)
        .ok();
  }
  std::string out;
  Status st;
  if (!connect) {
    out = EncodeDescriptor(options_.rdma->desc());
  } else {
    auto q = DecodeConnectRequest(payload);
    auto r = q.ok() ? options_.rdma->Connect(conn_id, *q) : Result<RdmaConnectReply>(q.status());
    if (r.ok()) {
      out = EncodeConnectReply(*r);
      counters_->rdma_connects.fetch_add(1);
    } else {
      st = r.status();
      MC_LOG(WARN) << "RDMA connect from " << PeerName(fd) << ": " << st.ToString();
    }
  }
  // `out` dies with this call: its reply leaves now.
  return io.Reply(req.request_id, st, out.data(), out.size()).ok() && io.Flush().ok();
}

bool TcpDataServer::Handle(ConnIo& io, uint64_t conn_id, const wire::Request& req) {
  if (req.op == static_cast<uint16_t>(wire::Op::kRdmaDescribe) ||
      req.op == static_cast<uint16_t>(wire::Op::kRdmaConnect)) {
    return HandleRdma(io, conn_id, req);
  }
  if (req.op == static_cast<uint16_t>(wire::Op::kReadSealed)) return HandleSealedRead(io, req);
  const RequestVerdict verdict = ScreenRequest(req, size_bytes_, options_.max_frame_bytes, check_);
  const bool is_write = verdict.op == OpKind::kWrite;
  if (verdict.action != RequestVerdict::Action::kServe) return Decline(io, req, verdict);
  std::optional<TermFence::Pass> pass;
  if (bool alive = true; !PassFence(io, req, verdict.op, &pass, &alive)) return alive;
  // A null base is absolute addressing (the p2p transfer engine's): the
  // offset is the address, already checked against registered memory.
  if (verdict.op == OpKind::kRetire) {
    // No bytes move; no sealed read of the range's old object is served
    // once this reply leaves (write_epochs.h).
    if (options_.epochs.valid()) options_.epochs.Retire(req.offset, req.length);
    counters_->retires.fetch_add(1);
    return io.Reply(req.request_id, Status::Ok(), nullptr, 0).ok();
  }
  uint8_t* range = base_ != nullptr ? base_ + req.offset : reinterpret_cast<uint8_t*>(req.offset);
  // Counters move before the reply so a client that saw the reply also sees them.
  if (is_write) {
    if (!io.BeforeSegmentWrite().ok()) return false;
    {
      // Counted in the epochs before the first byte lands (write_epochs.h),
      // and finished before the reply: a reader that saw the reply must not
      // find the write still in flight (a false "stale", seal 0).
      EpochWrite counted(options_.epochs, req.offset, req.length);
      if (!io.Read(range, req.length).ok()) return false;
    }
    counters_->bytes_written.fetch_add(req.length);
    counters_->served.fetch_add(1);
    return io.Reply(req.request_id, Status::Ok(), nullptr, 0).ok();
  }
  counters_->bytes_read.fetch_add(req.length);
  counters_->served.fetch_add(1);
  if (pass) io.HoldPass(std::move(*pass));
  return io.Reply(req.request_id, Status::Ok(), range, req.length).ok();
}

bool TcpDataServer::PassFence(ConnIo& io, const wire::Request& req, OpKind op,
                              std::optional<TermFence::Pass>* pass, bool* alive) {
  if (options_.fence == nullptr) return true;
  if (!io.ReleasePassesNotOf(req.grant_term).ok()) {
    *alive = false;
    return false;
  }
  *pass = options_.fence->Enter(req.grant_term);
  if (pass->has_value()) return true;
  RequestVerdict refused;
  refused.action = RequestVerdict::Action::kRefuse;
  refused.op = op;
  refused.status = Error(op == OpKind::kWrite ? ErrorCode::INVALID_WRITE : ErrorCode::INVALID_READ,
                         std::string(OpKindName(op)) + " with a grant of master term " +
                             std::to_string(req.grant_term) + "; this store has seen term " +
                             std::to_string(options_.fence->term()));
  *alive = Decline(io, req, refused);
  return false;
}

bool TcpDataServer::Decline(ConnIo& io, const wire::Request& req, const RequestVerdict& verdict) {
  const net::Stream fd = io.stream();
  if (verdict.action == RequestVerdict::Action::kClose) {
    counters_->protocol_errors.fetch_add(1);
    MC_LOG(WARN) << "closing connection from " << PeerName(fd) << ": " << verdict.status.message();
    (void)io.Reply(req.request_id, verdict.status, nullptr, 0);
    return false;
  }
  counters_->refused_requests.fetch_add(1);
  LogRefusal(fd, verdict.op, verdict.status);
  const bool is_write = verdict.op == OpKind::kWrite;
  if (is_write && !io.Drain(req.length).ok()) return false;
  return io.Reply(req.request_id, verdict.status, nullptr, 0).ok();
}

bool TcpDataServer::HandleSealedRead(ConnIo& io, const wire::Request& req) {
  uint8_t payload[wire::kSealBytes];
  if (!io.Read(payload, sizeof payload).ok()) return false;
  const uint64_t expect = LoadLe64(payload);
  // Screened as a READ; a sealed-read grant counts only when a seal is named.
  wire::Request as_read = req;
  as_read.op = static_cast<uint16_t>(wire::Op::kRead);
  const AccessCheck check = [&](OpKind op, uint64_t offset, uint64_t len, const Grant& g) {
    if (expect != 0) {
      Grant sealed = g;
      sealed.sealed_only = true;
      if (check_(op, offset, len, sealed).ok()) return Status::Ok();
    }
    return check_(op, offset, len, g);
  };
  const RequestVerdict verdict =
      ScreenRequest(as_read, size_bytes_, options_.max_frame_bytes, check);
  if (verdict.action != RequestVerdict::Action::kServe) return Decline(io, req, verdict);
  if (!options_.epochs.valid() && expect != 0) {
    return io.Reply(req.request_id,
                    Error(ErrorCode::NOT_SUPPORTED,
                          "this segment keeps no write epochs (RDMA peers write it)"),
                    nullptr, 0)
        .ok();
  }
  auto staged = io.Stage(wire::kSealBytes + req.length);
  if (!staged.ok()) return false;
  uint8_t* out = *staged;
  const uint8_t* src =
      base_ != nullptr ? base_ + req.offset : reinterpret_cast<const uint8_t*>(req.offset);
  auto copy = [&] { std::memcpy(out + wire::kSealBytes, src, req.length); };
  uint64_t seal = 0;
  if (options_.epochs.valid()) {
    seal = options_.epochs.SealedRead(req.offset, req.length, expect, copy);
  }
  if (seal == 0 && expect == 0) {
    // Learning, and nothing proves the bytes (a write in flight in their
    // regions, or no epochs): an ordinary read, seal 0 tells the client so.
    copy();
  } else if (seal == 0) {
    counters_->stale_reads.fetch_add(1);
    return io.Reply(req.request_id,
                    Error(ErrorCode::REPLICA_IS_GONE,
                          "range at offset " + std::to_string(req.offset) +
                              " was written since its seal"),
                    nullptr, 0)
        .ok();
  }
  StoreLe64(out, seal);
  counters_->bytes_read.fetch_add(req.length);
  counters_->sealed_reads.fetch_add(1);
  counters_->served.fetch_add(1);
  return io.Reply(req.request_id, Status::Ok(), out, wire::kSealBytes + req.length).ok();
}

}  // namespace mc::transfer

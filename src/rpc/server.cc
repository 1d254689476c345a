#include "rpc/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <list>
#include <mutex>
#include <unordered_map>

#include "common/byte_io.h"
#include "common/log.h"
#include "net/socket.h"
#include "proto/auth.h"
#include "proto/handshake.h"

namespace mc::rpc {

using namespace mc::proto;  // this layer speaks the wire format (a .cc, not a header)

struct Server::Counters {
  std::atomic<uint64_t> accepted{0}, refused{0}, active{0}, requests{0}, protocol_errors{0},
      auth_failures{0}, timeouts{0}, bytes_received{0}, tls_failures{0}, parked{0};
  std::atomic<uint64_t> next_loop{0};  // round robin of accepted connections
  std::atomic<bool> stopping{false};
};

namespace {

constexpr size_t kReadChunkBytes = 256u << 10;  // one recv() asks for this much
constexpr int kReadsPerWakeup = 8;              // then let other connections run
// SSL_read returns one record (at most 16 KiB) per call, so TLS gets more
// reads per wakeup for about the same bytes. OpenSSL reads the socket only
// as far as the record it returns (no read-ahead), so nothing waits in its
// buffer unseen by level-triggered epoll.
constexpr int kTlsReadsPerWakeup = 64;
constexpr int kMaxEvents = 256;
constexpr size_t kKeepBufferBytes = 4u << 20;   // input buffer kept between frames
constexpr int kTickMs = 50;                     // timeout checks at least this often

// Received bytes not yet consumed, in [begin, end) of `data`.
struct InBuffer {
  std::vector<char> data;
  size_t begin = 0, end = 0;
  size_t size() const { return end - begin; }
  const char* head() const { return data.data() + begin; }
  void Consume(size_t n) {
    begin += n;
    if (begin != end) return;
    begin = end = 0;
    // Give back the memory of a rare huge frame instead of keeping it per connection.
    if (data.size() > kKeepBufferBytes) std::vector<char>().swap(data);
  }
  char* Space(size_t want) {
    if (data.size() - end < want && begin > 0) {
      std::memmove(data.data(), data.data() + begin, size());
      end -= begin;
      begin = 0;
    }
    if (data.size() - end < want) data.resize(end + want);
    return data.data() + end;
  }
};

enum class ConnState { kAwaitHello, kAwaitAuth, kReady };

struct Conn {
  int fd = -1;
  net::SslPtr ssl;              // TLS session; null: plain TCP
  bool tls_ready = false;       // handshake done
  bool tls_sniffed = false;     // the first byte was a TLS record
  bool ssl_read_wants_write = false;
  ConnState state = ConnState::kAwaitHello;
  InBuffer in;
  std::string out;
  size_t out_begin = 0;
  proto::Nonce client_nonce{}, server_nonce{};
  uint64_t accepted_us = 0, last_activity_us = 0, frame_started_us = 0;
  bool closing = false;     // close as soon as `out` is flushed
  uint32_t events = 0;      // registered with epoll
  size_t pending() const { return out.size() - out_begin; }
  // Replies from `hold_at` on wait for their round's ticket (ReplyGate).
  uint64_t serial = 0;      // tells a reused fd from the connection a round held
  size_t hold_at = SIZE_MAX;
  uint32_t held_rounds = 0;
  size_t sendable() const { return std::min(out.size(), hold_at) - out_begin; }
};

// Tag pointers in epoll data for the two non-connection fds.
char kListenTag, kWakeTag;

std::string PeerName(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  char host[INET6_ADDRSTRLEN] = "?";
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  uint16_t port = 0;
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

// recv() or SSL_read: > 0 bytes, 0 the peer closed, -1 with errno (EAGAIN:
// try again when epoll says so).
ssize_t Receive(Conn* c, char* buf, size_t cap) {
  if (!c->ssl) return ::recv(c->fd, buf, cap, 0);
  size_t n = 0;
  ERR_clear_error();
  int rc = SSL_read_ex(c->ssl.get(), buf, cap, &n);
  if (rc == 1) return static_cast<ssize_t>(n);
  int err = SSL_get_error(c->ssl.get(), rc);
  if (err == SSL_ERROR_ZERO_RETURN) return 0;
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    c->ssl_read_wants_write = err == SSL_ERROR_WANT_WRITE;
    errno = EAGAIN;
    return -1;
  }
  MC_LOG(DEBUG) << "rpc: TLS read from fd " << c->fd << ": " << net::TlsErrorText(c->ssl.get(), rc);
  errno = EIO;
  return -1;
}

// send() or SSL_write, same conventions as Receive.
ssize_t Send(Conn* c, const char* data, size_t len) {
  if (!c->ssl) return ::send(c->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  size_t n = 0;
  ERR_clear_error();
  int rc = SSL_write_ex(c->ssl.get(), data, len, &n);
  if (rc == 1) return static_cast<ssize_t>(n);
  int err = SSL_get_error(c->ssl.get(), rc);
  errno = err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE ? EAGAIN : EIO;
  if (errno == EIO) ERR_clear_error();
  return -1;
}

}  // namespace

class Server::Loop {
 public:
  explicit Loop(Server* s) : s_(s), clock_(s->options_.clock ? *s->options_.clock : SystemClock::Instance()) {}
  ~Loop() {
    for (int fd : handoff_) ::close(fd);  // handed over after this loop stopped
    if (epfd_ >= 0) ::close(epfd_);
    if (wakefd_ >= 0) ::close(wakefd_);
  }

  Status Init() {
    epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
    wakefd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epfd_ < 0 || wakefd_ < 0) return Error(ErrorCode::RPC_FAIL, "epoll/eventfd failed");
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLEXCLUSIVE;  // one loop wakes per new connection
    ev.data.ptr = &kListenTag;
    if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, s_->listen_fd_, &ev) != 0)
      return Error(ErrorCode::RPC_FAIL, std::string("epoll_ctl: ") + std::strerror(errno));
    ev.events = EPOLLIN;
    ev.data.ptr = &kWakeTag;
    ::epoll_ctl(epfd_, EPOLL_CTL_ADD, wakefd_, &ev);
    if (s_->options_.reply_gate != nullptr) s_->options_.reply_gate->Subscribe([this] { Wake(); });
    if (s_->options_.parking != nullptr) s_->options_.parking->Subscribe([this] { Wake(); });
    return Status::Ok();
  }

  void Wake() {
    uint64_t one = 1;
    ssize_t n = ::write(wakefd_, &one, sizeof one);
    (void)n;
  }

  void Run() {
    epoll_event events[kMaxEvents];
    uint64_t last_tick_us = net::MonotonicUs();
    while (!s_->counters_->stopping.load(std::memory_order_relaxed)) {
      int n = ::epoll_wait(epfd_, events, kMaxEvents, kTickMs);
      for (int i = 0; i < n; ++i) {
        void* tag = events[i].data.ptr;
        if (tag == &kListenTag) {
          Accept();
        } else if (tag == &kWakeTag) {
          uint64_t count;
          ssize_t r = ::read(wakefd_, &count, sizeof count);  // drain
          (void)r;
          AdoptHandedOff();
        } else {
          OnEvent(static_cast<Conn*>(tag), events[i].events);
        }
      }
      if (!parked_.empty()) ServeParked();
      if (!held_.empty()) ReleaseReady();
      if (net::MonotonicUs() - last_tick_us >= kTickMs * 1000) {
        last_tick_us = net::MonotonicUs();
        CheckTimeouts();
      }
    }
    for (auto& [fd, c] : conns_) {
      Flush(c.get());  // best effort: replies already computed
      ::close(fd);
      s_->counters_->active.fetch_sub(1);
    }
    conns_.clear();
    std::lock_guard<std::mutex> lock(handoff_mu_);
    for (int fd : handoff_) {  // accepted for this loop, never served
      ::close(fd);
      s_->counters_->active.fetch_sub(1);
    }
    handoff_.clear();
  }

  // Gives this loop a connection another loop accepted (any thread).
  void HandOff(int fd) {
    {
      std::lock_guard<std::mutex> lock(handoff_mu_);
      handoff_.push_back(fd);
    }
    Wake();
  }

 private:
  // Whichever loop epoll wakes for the listening socket accepts everything
  // queued on it, so a burst of connects (a client pool opening) would all
  // land on one loop and leave the others idle. Accepted connections are
  // dealt out round robin instead; a loop's own share is adopted here, the
  // others' are handed to them.
  void Accept() {
    for (;;) {
      int fd = ::accept4(s_->listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or a transient error: epoll will tell us again
      Counters& k = *s_->counters_;
      if (k.active.load() >= s_->options_.max_connections) {
        k.refused.fetch_add(1);
        std::string frame;
        AppendReply(&frame, proto::Opcode::kConnectionError, 0,
                    Error(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
                          "too many connections (limit " +
                              std::to_string(s_->options_.max_connections) + ")"));
        ssize_t w = ::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)w;
        ::close(fd);
        continue;
      }
      k.active.fetch_add(1);  // now, so the limit above counts handed-off ones too
      const auto& loops = s_->loops_;
      Loop* to = loops[k.next_loop.fetch_add(1, std::memory_order_relaxed) % loops.size()].get();
      if (to == this) {
        Adopt(fd);
      } else {
        to->HandOff(fd);
      }
    }
  }

  void AdoptHandedOff() {
    std::vector<int> fds;
    {
      std::lock_guard<std::mutex> lock(handoff_mu_);
      fds.swap(handoff_);
    }
    for (int fd : fds) Adopt(fd);
  }

  // Serves an accepted connection (already counted in `active`) on this loop.
  void Adopt(int fd) {
    net::SetNoDelay(fd);
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    if (s_->options_.tls) c->ssl = s_->options_.tls->NewSsl(fd);
    c->serial = next_serial_++;
    c->accepted_us = c->last_activity_us = clock_.NowUs();
    Conn* raw = c.get();
    conns_[fd] = std::move(c);
    SetEvents(raw, EPOLLIN, true);
    s_->counters_->accepted.fetch_add(1);  // last: tests wait on it to know accepted_us is set
  }

  void SetEvents(Conn* c, uint32_t events, bool add = false) {
    if (!add && events == c->events) return;
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = c;
    ::epoll_ctl(epfd_, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c->fd, &ev);
    c->events = events;
  }

  void UpdateEvents(Conn* c) {
    uint32_t ev = 0;
    if (!c->closing && c->pending() < s_->options_.max_pending_output_bytes) ev |= EPOLLIN;
    if (c->sendable() > 0 || c->ssl_read_wants_write) ev |= EPOLLOUT;
    SetEvents(c, ev);
  }

  void OnEvent(Conn* c, uint32_t ev) {
    if (ev & (EPOLLERR | EPOLLHUP)) return Close(c);
    if (c->ssl && !c->tls_ready) return TlsHandshakeStep(c);
    const size_t out_before = c->out.size();
    if ((ev & EPOLLIN) || (c->ssl_read_wants_write && (ev & EPOLLOUT))) {
      c->ssl_read_wants_write = false;
      const int reads = c->ssl ? kTlsReadsPerWakeup : kReadsPerWakeup;
      for (int i = 0; i < reads && !c->closing; ++i) {
        char* space = c->in.Space(kReadChunkBytes);
        ssize_t n = Receive(c, space, kReadChunkBytes);
        if (n == 0) return Close(c);
        if (n < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
          return Close(c);
        }
        c->in.end += static_cast<size_t>(n);
        c->last_activity_us = clock_.NowUs();
        ProcessInput(c);
        s_->counters_->bytes_received.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
        if ((!c->ssl && static_cast<size_t>(n) < kReadChunkBytes) ||
            c->pending() >= s_->options_.max_pending_output_bytes)
          break;
      }
    }
    EndRound(c, out_before);
  }

  // This round's replies (from `out_before` on) wait for its ticket (see
  // HoldRound); then whatever may go out goes.
  void EndRound(Conn* c, size_t out_before) {
    if (s_->options_.reply_gate != nullptr && c->out.size() > out_before) {
      if (c->held_rounds++ == 0) c->hold_at = out_before;
      HoldRound(c);
    }
    FinishEvent(c);
  }

  // Before the TLS handshake: refuses a peer whose first byte is not a TLS
  // record (a plaintext client) with a plaintext ConnectionError it can
  // read, then drives SSL_do_handshake as epoll reports the socket ready.
  void TlsHandshakeStep(Conn* c) {
    if (!c->tls_sniffed) {
      unsigned char first[2];
      ssize_t n = ::recv(c->fd, first, sizeof first, MSG_PEEK | MSG_DONTWAIT);
      if (n == 0) return Close(c);
      if (n < 0) return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? void() : Close(c);
      if (!net::LooksLikeTls(first, static_cast<size_t>(n))) {
        s_->counters_->tls_failures.fetch_add(1);
        MC_LOG(WARN) << "rpc: refused a plaintext connection from " << PeerName(c->fd)
                     << ": this master requires TLS ([tls] cert is set)";
        std::string frame;
        AppendReply(&frame, proto::Opcode::kConnectionError, 0,
                    Error(ErrorCode::PROTOCOL_ERROR,
                          "this master requires TLS and the client connected without it (give "
                          "the client --tls-ca, [tls] ca or MOONCAKE_TLS_CA)"));
        ssize_t w = ::send(c->fd, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)w;
        return Close(c);
      }
      c->tls_sniffed = true;
    }
    ERR_clear_error();
    int rc = SSL_do_handshake(c->ssl.get());
    if (rc == 1) {
      c->tls_ready = true;
      c->last_activity_us = clock_.NowUs();
      return SetEvents(c, EPOLLIN);  // the client's Hello may already wait in the socket
    }
    int err = SSL_get_error(c->ssl.get(), rc);
    if (err == SSL_ERROR_WANT_READ) return SetEvents(c, EPOLLIN);
    if (err == SSL_ERROR_WANT_WRITE) return SetEvents(c, EPOLLOUT);
    s_->counters_->tls_failures.fetch_add(1);
    MC_LOG(WARN) << "rpc: TLS handshake with " << PeerName(c->fd)
                 << " failed: " << net::TlsErrorText(c->ssl.get(), rc);
    Close(c);
  }

  void FinishEvent(Conn* c) {
    if (!Flush(c)) return Close(c);
    if (c->closing && c->pending() == 0) return Close(c);
    UpdateEvents(c);
  }

  // A round is what one connection sent in one wakeup. Its replies wait for
  // the round's own ticket, so a connection that only reserved space is not
  // held behind another connection's commit in the same wakeup of the loop
  // (with many clients nearly every wakeup mixes both, and every PutStart
  // then waited for an fsync). Rounds queue behind the rounds still held.
  void HoldRound(Conn* c) {
    held_.push_back({s_->options_.reply_gate->Ticket(round_requests_),
                     {{c->fd, c->serial, c->out.size()}}});
    round_requests_ = 0;
  }

  // Sends the replies the gate released; on a failed gate closes the
  // connections that wait. A connection's rounds go out in order, but a
  // round held for one connection never delays another connection.
  void ReleaseReady() {
    ReplyGate& gate = *s_->options_.reply_gate;
    const bool failed = gate.Failed();
    const uint64_t released = gate.Released();
    std::vector<uint64_t> blocked;  // connections with an older round still held
    for (auto r = held_.begin(); r != held_.end();) {
      const bool open = failed || r->ticket <= released;
      std::erase_if(r->replies, [&](const HeldReply& h) {
        auto it = conns_.find(h.fd);
        if (it == conns_.end() || it->second->serial != h.serial) return true;  // closed
        if (!open || std::find(blocked.begin(), blocked.end(), h.serial) != blocked.end()) {
          blocked.push_back(h.serial);
          return false;
        }
        Conn* c = it->second.get();
        if (failed) {
          Close(c);
          return true;
        }
        c->hold_at = --c->held_rounds > 0 ? h.end : SIZE_MAX;
        FinishEvent(c);
        return true;
      });
      r = r->replies.empty() ? held_.erase(r) : std::next(r);
    }
  }

  // Handles every complete frame in the input buffer.
  void ProcessInput(Conn* c) {
    if (!c->ssl && c->state == ConnState::kAwaitHello &&
        net::LooksLikeTls(reinterpret_cast<const unsigned char*>(c->in.head()), c->in.size())) {
      s_->counters_->tls_failures.fetch_add(1);
      MC_LOG(WARN) << "rpc: a client at " << PeerName(c->fd)
                   << " started TLS, but this master has no TLS configured ([tls] cert)";
      c->in.Consume(c->in.size());
      // Plaintext bytes the client's TLS layer rejects as "not TLS".
      return FailConnection(c, proto::Opcode::kConnectionError, 0,
                            Error(ErrorCode::PROTOCOL_ERROR, "this master does not speak TLS"));
    }
    while (!c->closing && c->in.size() >= proto::kFrameHeaderBytes) {
      uint32_t limit = c->state == ConnState::kReady ? proto::kMaxPayloadBytes
                                                     : proto::kMaxHandshakePayloadBytes;
      auto h = proto::DecodeFrameHeader(reinterpret_cast<const uint8_t*>(c->in.head()),
                                        c->in.size(), limit);
      if (!h.ok()) return FailConnection(c, proto::Opcode::kConnectionError, 0, h.status());
      size_t total = proto::kFrameHeaderBytes + h->payload_bytes;
      if (c->in.size() < total) break;
      std::string_view payload(c->in.head() + proto::kFrameHeaderBytes, h->payload_bytes);
      HandleFrame(c, *h, payload);
      c->in.Consume(total);
    }
    // A frame that has started but not finished starts the slowloris clock.
    c->frame_started_us = c->in.size() == 0 ? 0 : (c->frame_started_us ? c->frame_started_us : clock_.NowUs());
  }

  void HandleFrame(Conn* c, const proto::FrameHeader& h, std::string_view payload) {
    if (h.is_reply()) {
      return FailConnection(c, h.opcode, h.request_id,
                            Error(ErrorCode::PROTOCOL_ERROR, "a client sent a reply frame"));
    }
    if (c->state == ConnState::kAwaitHello) return OnHello(c, h, payload);
    if (c->state == ConnState::kAwaitAuth) return OnAuth(c, h, payload);
    if (h.version != proto::kProtocolVersion) {
      return FailConnection(c, h.opcode, h.request_id,
                            Error(ErrorCode::PROTOCOL_ERROR,
                                  proto::VersionMismatchMessage(h.version, proto::kProtocolVersion)));
    }
    s_->counters_->requests.fetch_add(1, std::memory_order_relaxed);
    if (proto::IsNotification(h.opcode)) {
      // No reply, so nothing for the reply gate to hold either.
      std::string dropped;
      Dispatch(*s_->handler_, h.opcode, payload, &dropped);
      return;
    }
    ++round_requests_;
    const uint64_t generation = s_->options_.parking ? s_->options_.parking->generation() : 0;
    uint64_t wait_us = 0;
    if (DispatchCall(c, h.opcode, h.request_id, payload, false, &wait_us)) return;
    s_->counters_->parked.fetch_add(1, std::memory_order_relaxed);
    parked_.push_back({c->fd, c->serial, h.opcode, h.request_id, std::string(payload),
                       clock_.NowUs() + wait_us, generation});
  }

  // Calls the handler and appends its reply; false when it parked the call
  // (no reply; *wait_us: how long it may wait).
  bool DispatchCall(Conn* c, proto::Opcode op, uint64_t request_id, std::string_view payload,
                    bool due, uint64_t* wait_us) {
    size_t at = BeginReply(&c->out, op, request_id);
    ParkScope scope(s_->options_.parking != nullptr, due);
    Dispatch(*s_->handler_, op, payload, &c->out);
    if (scope.parked) {
      c->out.resize(at);
      *wait_us = scope.wait_us;
      return false;
    }
    EndReply(&c->out, at);
    return true;
  }

  // Calls parked calls again: all of them after a wake of the lot, the due
  // ones (ParkCall answers kDue) at their deadline. A connection closed
  // meanwhile loses its parked calls.
  void ServeParked() {
    const uint64_t generation = s_->options_.parking->generation();
    const uint64_t now = clock_.NowUs();
    std::vector<ParkedCall> again;
    std::erase_if(parked_, [&](ParkedCall& p) {
      auto it = conns_.find(p.fd);
      if (it == conns_.end() || it->second->serial != p.serial || it->second->closing) return true;
      if (p.generation == generation && now < p.deadline_us) return false;
      again.push_back(std::move(p));
      return true;
    });
    for (ParkedCall& p : again) {
      auto it = conns_.find(p.fd);
      if (it == conns_.end() || it->second->serial != p.serial) continue;
      Conn* c = it->second.get();
      const size_t out_before = c->out.size();
      ++round_requests_;
      uint64_t unused = 0;
      p.generation = generation;
      if (!DispatchCall(c, p.op, p.request_id, p.payload, now >= p.deadline_us, &unused)) {
        parked_.push_back(std::move(p));  // its first deadline stands
        continue;
      }
      EndRound(c, out_before);
    }
  }

  void OnHello(Conn* c, const proto::FrameHeader& h, std::string_view payload) {
    if (h.opcode != proto::Opcode::kHello) {
      ErrorCode code = s_->options_.auth_token.empty() ? ErrorCode::PROTOCOL_ERROR
                                                       : ErrorCode::AUTH_FAILED;
      return FailConnection(c, h.opcode, h.request_id,
                            Error(code, "the connection must start with Hello, got " +
                                            std::string(proto::OpcodeName(h.opcode))));
    }
    if (h.version != proto::kProtocolVersion) {
      return FailConnection(c, h.opcode, h.request_id,
                            Error(ErrorCode::PROTOCOL_ERROR,
                                  proto::VersionMismatchMessage(h.version, proto::kProtocolVersion)));
    }
    proto::HelloRequest hello;
    Status st = proto::DecodePayload(payload, &hello, "Hello");
    if (!st.ok()) return FailConnection(c, h.opcode, h.request_id, st);
    c->client_nonce = hello.client_nonce;
    c->server_nonce = proto::RandomNonce();
    proto::HelloReply reply{proto::kProtocolVersion, !s_->options_.auth_token.empty(),
                            c->server_nonce};
    size_t at = BeginReply(&c->out, h.opcode, h.request_id);
    proto::EncodeReply(Result<proto::HelloReply>(reply), &c->out);
    EndReply(&c->out, at);
    c->state = ConnState::kAwaitAuth;
  }

  void OnAuth(Conn* c, const proto::FrameHeader& h, std::string_view payload) {
    const std::string& token = s_->options_.auth_token;
    proto::AuthRequest auth;
    Status st = h.opcode == proto::Opcode::kAuth
                    ? proto::DecodePayload(payload, &auth, "Auth")
                    : Error(ErrorCode::PROTOCOL_ERROR, "expected Auth after Hello, got " +
                                                           std::string(proto::OpcodeName(h.opcode)));
    if (st.ok() && !token.empty()) {
      if (!auth.has_proof) {
        st = Error(ErrorCode::AUTH_FAILED,
                   "this master requires an auth token and the client sent none "
                   "(set MOONCAKE_AUTH_TOKEN or cluster.auth_token)");
      } else if (!proto::ProofEquals(auth.client_proof,
                                     proto::ClientProof(token, c->server_nonce, c->client_nonce))) {
        st = Error(ErrorCode::AUTH_FAILED, "wrong auth token");
      }
    }
    if (!st.ok()) {
      if (st.code() == ErrorCode::AUTH_FAILED) s_->counters_->auth_failures.fetch_add(1);
      return FailConnection(c, h.opcode, h.request_id, st);
    }
    proto::AuthReply reply;
    if (!token.empty()) {
      reply.has_proof = true;
      reply.server_proof = proto::ServerProof(token, c->client_nonce, c->server_nonce);
    }
    size_t at = BeginReply(&c->out, h.opcode, h.request_id);
    proto::EncodeReply(Result<proto::AuthReply>(reply), &c->out);
    EndReply(&c->out, at);
    c->state = ConnState::kReady;
  }

  // Replies with `st` and closes once the reply is flushed.
  void FailConnection(Conn* c, proto::Opcode op, uint64_t request_id, const Status& st) {
    if (st.code() != ErrorCode::AUTH_FAILED) s_->counters_->protocol_errors.fetch_add(1);
    MC_LOG(DEBUG) << "rpc: closing connection fd " << c->fd << ": " << st.ToString();
    AppendReply(&c->out, op, request_id, st);
    c->closing = true;
  }

  static size_t BeginReply(std::string* out, proto::Opcode op, uint64_t request_id) {
    size_t at = out->size();
    out->resize(at + proto::kFrameHeaderBytes);
    proto::FrameHeader h{proto::kProtocolVersion, proto::kFlagReply, op, 0, request_id};
    proto::EncodeFrameHeader(h, reinterpret_cast<uint8_t*>(out->data() + at));
    return at;
  }
  // Patches the payload length into the header BeginReply wrote.
  static void EndReply(std::string* out, size_t at) {
    size_t len = out->size() - at - proto::kFrameHeaderBytes;
    StoreLe32(out->data() + at + 8, static_cast<uint32_t>(len));
  }
  static void AppendReply(std::string* out, proto::Opcode op, uint64_t id, const Status& st) {
    size_t at = BeginReply(out, op, id);
    proto::EncodeErrorReply(st, out);
    EndReply(out, at);
  }

  // Writes what it can; false if the connection is broken.
  bool Flush(Conn* c) {
    while (c->sendable() > 0) {
      ssize_t n = Send(c, c->out.data() + c->out_begin, c->sendable());
      if (n > 0) {
        c->out_begin += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      return false;
    }
    if (c->pending() == 0) {
      c->out.clear();
      c->out_begin = 0;
    }
    return true;
  }

  void Close(Conn* c) {
    ::epoll_ctl(epfd_, EPOLL_CTL_DEL, c->fd, nullptr);
    ::close(c->fd);
    s_->counters_->active.fetch_sub(1);
    conns_.erase(c->fd);  // destroys c
  }

  void CheckTimeouts() {
    const ServerOptions& o = s_->options_;
    uint64_t now = clock_.NowUs();
    std::vector<Conn*> expired;
    for (auto& [fd, c] : conns_) {
      bool late = (c->state != ConnState::kReady && now - c->accepted_us > o.handshake_timeout_us) ||
                  (c->frame_started_us != 0 && now - c->frame_started_us > o.frame_timeout_us) ||
                  (c->closing && now - c->last_activity_us > o.frame_timeout_us) ||
                  (o.idle_timeout_us != 0 && now - c->last_activity_us > o.idle_timeout_us);
      if (late) expired.push_back(c.get());
    }
    for (Conn* c : expired) {
      s_->counters_->timeouts.fetch_add(1);
      MC_LOG(DEBUG) << "rpc: closing connection fd " << c->fd << " on timeout";
      Close(c);
    }
  }

  Server* s_;
  const Clock& clock_;
  int epfd_ = -1;
  int wakefd_ = -1;
  std::unordered_map<int, std::unique_ptr<Conn>> conns_;
  std::mutex handoff_mu_;
  std::vector<int> handoff_;  // connections other loops accepted for this one
  struct HeldReply {
    int fd;
    uint64_t serial;
    size_t end;  // offset in the connection's `out` where this round's replies end
  };
  struct HeldRound {
    uint64_t ticket;
    std::vector<HeldReply> replies;
  };
  std::list<HeldRound> held_;      // rounds waiting for the gate, oldest first
  struct ParkedCall {
    int fd;
    uint64_t serial;
    proto::Opcode op;
    uint64_t request_id;
    std::string payload;
    uint64_t deadline_us;  // then due
    uint64_t generation;   // the lot's when last called: a wake changes it
  };
  std::vector<ParkedCall> parked_;
  // Requests handled since the last ticket (a round, or what a closed
  // connection left; counted on so the gate's own per-thread counts match).
  uint64_t round_requests_ = 0;
  uint64_t next_serial_ = 1;
};

Server::Server(ServerOptions options, Handler* handler)
    : options_(std::move(options)), handler_(handler), counters_(std::make_unique<Counters>()) {}

Server::~Server() { Stop(); }

Status Server::Start() {
  if (options_.io_threads == 0 || options_.max_connections == 0)
    return Error(ErrorCode::INVALID_PARAMS, "rpc server needs io_threads and max_connections > 0");
  MC_ASSIGN_OR_RETURN(listen_fd_, net::ListenTcp(options_.address, options_.port, 1024));
  port_ = net::LocalPort(listen_fd_);
  for (uint32_t i = 0; i < options_.io_threads; ++i) {
    auto loop = std::make_unique<Loop>(this);
    Status st = loop->Init();
    if (!st.ok()) {
      Stop();
      return st;
    }
    loops_.push_back(std::move(loop));
  }
  for (auto& loop : loops_) threads_.emplace_back([l = loop.get()] { l->Run(); });
  MC_LOG(INFO) << "rpc server listening on " << options_.address << ":" << port_ << " ("
               << options_.io_threads << " io threads, auth "
               << (options_.auth_token.empty() ? "off" : "on") << ", TLS "
               << (options_.tls ? "on" : "off") << ")";
  return Status::Ok();
}

void Server::Stop() {
  counters_->stopping.store(true);
  for (auto& loop : loops_) loop->Wake();
  for (auto& t : threads_) t.join();
  if (options_.reply_gate != nullptr) options_.reply_gate->Unsubscribe();  // before the loops go
  if (options_.parking != nullptr) options_.parking->Unsubscribe();
  threads_.clear();
  loops_.clear();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

ServerStats Server::stats() const {
  const Counters& k = *counters_;
  return ServerStats{k.accepted.load(), k.refused.load(), k.active.load(), k.requests.load(),
                     k.protocol_errors.load(), k.auth_failures.load(), k.timeouts.load(),
                     k.bytes_received.load(), k.tls_failures.load(), k.parked.load()};
}

}  // namespace mc::rpc

#include "rpc/client.h"

#include <openssl/ssl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "proto/auth.h"
#include "proto/handshake.h"
#include "common/log.h"

namespace mc::rpc {

using namespace mc::proto;  // this layer speaks the wire format (a .cc, not a header)

namespace {
constexpr size_t kReadChunkBytes = 64u << 10;
}  // namespace

struct MasterClient::Conn {
  int fd = -1;
  net::SslPtr ssl;  // TLS; freed before the fd is closed (member order)
  std::vector<char> buf;
  size_t begin = 0, end = 0;  // unread bytes
  uint64_t next_request_id = 1;
  std::string scratch;        // the outgoing frame, reused
  ~Conn() {
    ssl.reset();
    if (fd >= 0) ::close(fd);
  }
  net::Stream stream() const { return net::Stream(fd, ssl.get()); }

  // Reads until one whole frame is buffered; returns its header, payload at
  // buf[begin + 20, ...). Call Consume(header) when done with it.
  Result<FrameHeader> ReadFrame(uint64_t deadline_us) {
    for (;;) {
      if (end - begin >= kFrameHeaderBytes) {
        MC_ASSIGN_OR_RETURN(FrameHeader h,
                            DecodeFrameHeader(reinterpret_cast<const uint8_t*>(&buf[begin]),
                                              end - begin, kMaxPayloadBytes));
        if (end - begin >= kFrameHeaderBytes + h.payload_bytes) return h;
      }
      if (begin > 0 && begin == end) begin = end = 0;
      if (buf.size() - end < kReadChunkBytes) {
        if (begin > 0) {
          std::memmove(buf.data(), buf.data() + begin, end - begin);
          end -= begin;
          begin = 0;
        }
        buf.resize(end + kReadChunkBytes);
      }
      MC_ASSIGN_OR_RETURN(size_t n,
                          net::ReadSome(stream(), buf.data() + end, buf.size() - end, deadline_us));
      if (n == 0) return Error(ErrorCode::RPC_FAIL, "connection closed by the master");
      end += n;
    }
  }
  std::string_view Payload(const FrameHeader& h) const {
    return std::string_view(&buf[begin + kFrameHeaderBytes], h.payload_bytes);
  }
  void Consume(const FrameHeader& h) { begin += kFrameHeaderBytes + h.payload_bytes; }

  // Appends one frame to `scratch`.
  void Frame(Opcode op, uint64_t id, std::string_view payload) {
    const size_t at = scratch.size();
    scratch.resize(at + kFrameHeaderBytes);
    FrameHeader h{kProtocolVersion, 0, op, static_cast<uint32_t>(payload.size()), id};
    EncodeFrameHeader(h, reinterpret_cast<uint8_t*>(scratch.data() + at));
    scratch.append(payload);
  }

  // Sends `before` (notifications) and then the frame, in one write.
  Status Send(Opcode op, uint64_t id, std::string_view payload, uint64_t deadline_us,
              const std::vector<std::pair<Opcode, std::string>>& before = {}) {
    scratch.clear();
    for (const auto& [nop, npayload] : before) Frame(nop, next_request_id++, npayload);
    Frame(op, id, payload);
    return net::WriteAll(stream(), scratch, deadline_us);
  }

  // Waits (once) for the reply to a request just sent to start arriving, so
  // the read that follows finds it rather than failing with EAGAIN first.
  // A TLS stream, or bytes already buffered, need no wait.
  void AwaitReply(uint64_t deadline_us) const {
    if (ssl != nullptr || end > begin) return;
    const uint64_t now = net::MonotonicUs();
    if (now >= deadline_us) return;
    pollfd p{fd, POLLIN, 0};
    (void)::poll(&p, 1, static_cast<int>(std::min<uint64_t>((deadline_us - now + 999) / 1000, 1u << 30)));
  }

  // An idle connection with something to read was closed (or told off) by
  // the master meanwhile.
  bool LooksAlive() const {
    if (ssl != nullptr && SSL_has_pending(ssl.get()) == 1) return false;
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 0;
  }
};

MasterClient::MasterClient(ClientOptions options) : options_(std::move(options)) {}

MasterClient::~MasterClient() {
  {
    std::lock_guard<std::mutex> lock(defer_mu_);
    stopping_ = true;
  }
  defer_cv_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  Frames left = TakeDeferred();
  if (!left.empty()) (void)SendOnIdle(left);
}

MasterClient::Frames MasterClient::TakeDeferred() {
  std::lock_guard<std::mutex> lock(defer_mu_);
  Frames out;
  out.swap(deferred_);
  return out;
}

bool MasterClient::SendOnIdle(const Frames& frames) {
  std::unique_ptr<Conn> c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (!idle_.empty() && c == nullptr) {
      c = std::move(idle_.back());
      idle_.pop_back();
      if (!c->LooksAlive()) {
        c.reset();
        --open_;
      }
    }
  }
  if (c == nullptr) return false;
  c->scratch.clear();
  for (const auto& [op, payload] : frames) c->Frame(op, c->next_request_id++, payload);
  Status st = net::WriteAll(c->stream(), c->scratch, net::MonotonicUs() + options_.rpc_timeout_us);
  if (!st.ok()) {
    MC_LOG(DEBUG) << "deferred notifications to " << options_.master << ": " << st.ToString();
  }
  Release(st.ok() ? std::move(c) : nullptr);
  return true;
}

void MasterClient::FlushLoop() {
  std::unique_lock<std::mutex> lock(defer_mu_);
  while (!stopping_) {
    if (deferred_.empty()) {
      flusher_asleep_ = true;
      defer_cv_.wait(lock, [this] { return stopping_ || !deferred_.empty(); });
      flusher_asleep_ = false;
      continue;
    }
    // Busy: wake when the oldest frame is due, with no notify per frame.
    const uint64_t due = deferred_since_us_ + kDeferredNotifyUs;
    const uint64_t now = net::MonotonicUs();
    if (now < due) {
      defer_cv_.wait_for(lock, std::chrono::microseconds(due - now));
      continue;
    }
    Frames frames;
    frames.swap(deferred_);
    lock.unlock();
    // No idle connection: every one is carrying a call, which will not take
    // these; try again after another delay.
    const bool sent = SendOnIdle(frames);
    lock.lock();
    if (!sent) {
      frames.insert(frames.end(), std::make_move_iterator(deferred_.begin()),
                    std::make_move_iterator(deferred_.end()));
      deferred_.swap(frames);
      deferred_since_us_ = net::MonotonicUs();
    }
  }
}

void MasterClient::ReleaseLeasesSoon(const msg::Batch<msg::KeyRequest>& req) {
  std::string payload;
  EncodePayload(req, &payload);
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(defer_mu_);
    if (deferred_.size() < kMaxDeferredFrames && !stopping_) {
      if (deferred_.empty()) deferred_since_us_ = net::MonotonicUs();
      deferred_.emplace_back(Opcode::kReleaseLeases, std::move(payload));
      if (!flusher_.joinable()) flusher_ = std::thread([this] { FlushLoop(); });
      wake = flusher_asleep_;
      payload.clear();
    }
  }
  if (wake) defer_cv_.notify_one();
  if (payload.empty()) return;
  Status st = Notify(Opcode::kReleaseLeases, payload);  // the queue is full: now
  if (!st.ok()) {
    MC_LOG(DEBUG) << "releasing read leases: " << st.ToString();
  }
}

Status MasterClient::Unavailable(const std::string& why) const {
  return Error(ErrorCode::RPC_FAIL, "master unavailable at " + options_.master + ": " + why);
}

Result<std::unique_ptr<MasterClient::Conn>> MasterClient::Acquire(uint64_t deadline_us,
                                                                  uint64_t connect_by_us) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      while (!idle_.empty()) {
        std::unique_ptr<Conn> c = std::move(idle_.back());
        idle_.pop_back();
        if (c->LooksAlive()) return c;
        --open_;  // stale: drop it, maybe open a fresh one below
      }
      if (open_ < options_.max_connections) break;
      uint64_t now = net::MonotonicUs();
      if (now >= deadline_us) {
        return Error(ErrorCode::RPC_TIMEOUT, "all " + std::to_string(options_.max_connections) +
                                                 " connections to master " + options_.master +
                                                 " stayed busy past the timeout");
      }
      cv_.wait_for(lock, std::chrono::microseconds(deadline_us - now));
    }
    ++open_;
  }
  auto c = ConnectWithRetries(connect_by_us);
  if (!c.ok()) Release(nullptr);
  return c;
}

void MasterClient::Release(std::unique_ptr<Conn> conn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (conn) {
    idle_.push_back(std::move(conn));
  } else {
    --open_;
  }
  cv_.notify_one();
}

Result<std::unique_ptr<MasterClient::Conn>> MasterClient::ConnectWithRetries(
    uint64_t connect_by_us) {
  uint64_t backoff_us = options_.initial_backoff_us;
  const uint32_t attempts = options_.retries == 0 ? 1 : options_.retries;
  // The whole try, backoff included, fits in rpc_timeout x attempts: the
  // bound the man pages promise for "master unavailable". The backoff comes
  // out of the attempts' time, so an unreachable master costs no more.
  const uint64_t deadline_us = connect_by_us != 0
                                   ? connect_by_us
                                   : net::MonotonicUs() + options_.rpc_timeout_us * attempts;
  Status last;
  uint32_t made = 0;
  // A client that locates its master (an HA group) keeps trying until the
  // deadline however fast the attempts fail: a failover (a port refused, no
  // leader named yet) lasts about the leader's lease, longer than the
  // backoff of `retries` refused connects.
  const bool until_deadline = options_.locate != nullptr;
  for (uint32_t i = 0; until_deadline || i < attempts; ++i) {
    uint64_t now = net::MonotonicUs();
    if (i > 0) {
      if (now >= deadline_us) break;
      const uint64_t pause_us = std::min(backoff_us, deadline_us - now);
      std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
      backoff_us = std::min(backoff_us * 2, options_.max_backoff_us);
      now = net::MonotonicUs();
      if (now >= deadline_us) break;
    }
    ++made;
    std::string address = options_.master;
    if (options_.locate) {
      auto located = options_.locate(i > 0);
      if (!located.ok()) {
        last = located.status();
        continue;
      }
      address = std::move(*located);
    }
    auto hp = net::ParseHostPort(address);
    if (!hp.ok()) return hp.status();
    auto c = ConnectOnce(*hp, std::min(options_.rpc_timeout_us, deadline_us - now));
    if (c.ok()) return c;
    last = c.status();
    // The master answered and said no: retrying will not change its mind.
    if (last.code() == ErrorCode::AUTH_FAILED || last.code() == ErrorCode::PROTOCOL_ERROR) {
      return last;
    }
  }
  return Unavailable(last.message() + " (" + std::to_string(made) + " attempts)");
}

Result<std::unique_ptr<MasterClient::Conn>> MasterClient::ConnectOnce(const net::HostPort& hp,
                                                                      uint64_t timeout_us) {
  // Connect and handshake share one attempt's time.
  const uint64_t deadline_us = net::MonotonicUs() + timeout_us;
  MC_ASSIGN_OR_RETURN(int fd, net::ConnectTcp(hp, timeout_us));
  auto c = std::make_unique<Conn>();
  c->fd = fd;
  if (options_.tls != nullptr) {
    auto ssl = net::TlsHandshake(*options_.tls, fd, hp.host, deadline_us);
    if (!ssl.ok()) {
      return Status(ssl.code(), "master at " + options_.master + ": " + ssl.status().message());
    }
    c->ssl = std::move(*ssl);
    net::SetNonBlocking(fd, true);  // WriteAll/ReadSome poll a TLS fd to their deadline
  }
  MC_RETURN_IF_ERROR(Handshake(c.get(), deadline_us));
  return c;
}

Status MasterClient::Handshake(Conn* c, uint64_t deadline_us) {
  const std::string& token = options_.auth_token;
  const std::string who = "master at " + options_.master;
  HelloRequest hello{RandomNonce()};
  std::string payload;
  EncodePayload(hello, &payload);
  MC_RETURN_IF_ERROR(c->Send(Opcode::kHello, 0, payload, deadline_us));
  MC_ASSIGN_OR_RETURN(FrameHeader h, c->ReadFrame(deadline_us));
  auto hr = DecodeReply<HelloReply>(c->Payload(h), "Hello reply");
  c->Consume(h);
  if (!hr.ok()) return Status(hr.code(), who + " refused the connection: " + hr.status().message());
  if (hr->server_version != kProtocolVersion) {
    return Error(ErrorCode::PROTOCOL_ERROR,
                 who + ": " + VersionMismatchMessage(kProtocolVersion, hr->server_version));
  }
  if (!hr->auth_required && !token.empty()) {
    return Error(ErrorCode::AUTH_FAILED,
                 who + " has no auth token configured but this client has one; refusing "
                       "(the master cannot prove who it is)");
  }
  AuthRequest auth;
  if (!token.empty()) {
    auth.has_proof = true;
    auth.client_proof = ClientProof(token, hr->server_nonce, hello.client_nonce);
  }
  payload.clear();
  EncodePayload(auth, &payload);
  MC_RETURN_IF_ERROR(c->Send(Opcode::kAuth, 0, payload, deadline_us));
  MC_ASSIGN_OR_RETURN(h, c->ReadFrame(deadline_us));
  auto ar = DecodeReply<AuthReply>(c->Payload(h), "Auth reply");
  c->Consume(h);
  if (!ar.ok()) return Status(ar.code(), who + " refused the connection: " + ar.status().message());
  if (!token.empty() &&
      (!ar->has_proof ||
       !ProofEquals(ar->server_proof, ServerProof(token, hello.client_nonce, hr->server_nonce)))) {
    return Error(ErrorCode::AUTH_FAILED, who + " failed to prove it knows the auth token");
  }
  return Status::Ok();
}

Status MasterClient::Dropped(Opcode op, const Status& st, const char* when) {
  Release(nullptr);  // the stream is in an unknown state: drop it
  ErrorCode code = st.code() == ErrorCode::RPC_TIMEOUT ? ErrorCode::RPC_TIMEOUT : ErrorCode::RPC_FAIL;
  return Error(code, std::string(OpcodeName(op)) + " to master at " + options_.master + ": " +
                         when + ": " + st.message());
}

Result<std::unique_ptr<MasterClient::Conn>> MasterClient::SendOne(Opcode op,
                                                                  std::string_view payload,
                                                                  uint64_t* deadline_us,
                                                                  uint64_t* id,
                                                                  uint64_t connect_by_us,
                                                                  bool* sent) {
  MC_ASSIGN_OR_RETURN(std::unique_ptr<Conn> c, Acquire(*deadline_us, connect_by_us));
  // The request's own rpc_timeout starts once it has a connection: one that
  // took several attempts (a master coming back, a partition healing) must
  // not leave the request no time at all and drop a good connection.
  *deadline_us = std::max(*deadline_us, net::MonotonicUs() + options_.rpc_timeout_us);
  // Deferred notifications ride in front of this request.
  Frames before = TakeDeferred();
  *id = c->next_request_id++;
  Status st = c->Send(op, *id, payload, *deadline_us, before);
  if (sent != nullptr) *sent = true;  // maybe in part: it may have arrived
  if (!st.ok()) return Dropped(op, st, "sending");
  return c;
}

bool RetriedOnFailover(Opcode op) {
  switch (op) {
    case Opcode::kPing:
    case Opcode::kPutStart:
    case Opcode::kPutEnd:
    case Opcode::kPutRevoke:
    case Opcode::kGetReplicaList:
    case Opcode::kExistKey:
    case Opcode::kRemove:
    case Opcode::kListKeys:
    case Opcode::kClusterStatus:
    case Opcode::kBatchPutStart:
    case Opcode::kBatchPutEnd:
    case Opcode::kBatchPutRevoke:
    case Opcode::kBatchGetReplicaList:
    case Opcode::kBatchExistKey:
    case Opcode::kBatchRemove:
    case Opcode::kBatchPutStartEx:
    case Opcode::kBatchUpsertStart:
    case Opcode::kQueryTask:
      return true;
    default:
      return false;
  }
}

Result<std::string> MasterClient::Call(Opcode op, std::string_view request_payload) {
  const uint32_t attempts = options_.retries == 0 ? 1 : options_.retries;
  const uint64_t budget_end_us = net::MonotonicUs() + options_.rpc_timeout_us * attempts;
  const bool follows = options_.locate != nullptr && RetriedOnFailover(op);
  for (uint64_t connect_by_us = 0;;) {
    bool sent = false;
    auto r = CallOnce(op, request_payload, connect_by_us, &sent);
    if (r.ok() || !follows || !sent) return r;
    if (r.code() != ErrorCode::RPC_FAIL && r.code() != ErrorCode::RPC_TIMEOUT) return r;
    if (net::MonotonicUs() >= budget_end_us) return r;
    connect_by_us = budget_end_us;  // the new leader is looked for in what is left
  }
}

Result<std::string> MasterClient::CallOnce(Opcode op, std::string_view request_payload,
                                           uint64_t connect_by_us, bool* sent) {
  uint64_t deadline = net::MonotonicUs() + options_.rpc_timeout_us;
  uint64_t id = 0;
  MC_ASSIGN_OR_RETURN(std::unique_ptr<Conn> c,
                      SendOne(op, request_payload, &deadline, &id, connect_by_us, sent));
  c->AwaitReply(deadline);
  for (;;) {
    auto h = c->ReadFrame(deadline);
    if (!h.ok()) return Dropped(op, h.status(), "waiting for the reply");
    if (h->opcode == Opcode::kConnectionError) {
      *sent = false;  // the master refused the frame: a retry would be too
      auto err = DecodeReply<Empty>(c->Payload(*h), "ConnectionError");
      Status s = err.ok() ? Error(ErrorCode::PROTOCOL_ERROR, "empty ConnectionError") : err.status();
      return Dropped(op, s, "the master closed the connection");
    }
    if (h->is_reply() && h->request_id == id && h->opcode == op) {
      std::string reply(c->Payload(*h));
      c->Consume(*h);
      Release(std::move(c));
      return reply;
    }
    // A late reply to an abandoned request, or a master that predates a
    // notification answering it as an unknown opcode.
    c->Consume(*h);
  }
}

Status MasterClient::Notify(Opcode op, std::string_view request_payload) {
  uint64_t id = 0;
  uint64_t deadline = net::MonotonicUs() + options_.rpc_timeout_us;
  MC_ASSIGN_OR_RETURN(std::unique_ptr<Conn> c, SendOne(op, request_payload, &deadline, &id));
  Release(std::move(c));
  return Status::Ok();
}

}  // namespace mc::rpc

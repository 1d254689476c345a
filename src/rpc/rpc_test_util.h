// The rpc tests' shared fixtures: a handler answering from a small key set,
// a server on a free loopback port, and a raw TCP peer for arbitrary bytes.
#pragma once

#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <type_traits>

#include "proto/auth.h"
#include "proto/handshake.h"
#include "proto/testing.h"
#include "rpc/client.h"
#include "rpc/server.h"
#include "rpc/testing.h"

using namespace mc;
using namespace mc::rpc;
using namespace mc::proto;

namespace {

// Answers every operation from a small in-memory key set; thread-safe.
class TestHandler : public testing::ElementwiseHandler {
 public:
  Status MountSegment(const msg::MountSegmentRequest& r) override {
    return r.segment.name.empty() ? Error(ErrorCode::INVALID_PARAMS, "empty segment name")
                                  : Status::Ok();
  }
  Result<msg::PingReply> Ping(const msg::PingRequest& r) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      ++ping_threads[std::this_thread::get_id()];
    }
    return msg::PingReply{r.client.hi == 7, 42};
  }
  std::map<std::thread::id, int> ping_threads;  // which I/O thread answered how many pings
  Result<msg::PutStartReply> PutStart(const msg::PutStartRequest& r) override {
    std::lock_guard<std::mutex> l(mu_);
    if (!keys_.emplace(r.key, r.size_bytes).second)
      return Error(ErrorCode::OBJECT_ALREADY_EXISTS, "key '" + r.key + "' exists");
    msg::BufferDesc b{"seg", "127.0.0.1:1", "", "h", 0, r.size_bytes};
    return msg::PutStartReply{{msg::ReplicaDesc{msg::ReplicaStatus::kProcessing, {b}}}};
  }
  Status PutEnd(const msg::KeyRequest&) override { return Status::Ok(); }
  Result<msg::GetReplicaListReply> GetReplicaList(const msg::KeyRequest& r) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = keys_.find(r.key);
    if (it == keys_.end()) return Error(ErrorCode::OBJECT_NOT_FOUND, "key '" + r.key + "' not found");
    return msg::GetReplicaListReply{{}, it->second, 10000000};
  }
  Result<bool> ExistKey(const msg::KeyRequest& r) override {
    std::lock_guard<std::mutex> l(mu_);
    return keys_.count(r.key) == 1;
  }
  Status Remove(const msg::RemoveRequest& r) override {
    std::lock_guard<std::mutex> l(mu_);
    return keys_.erase(r.key) ? Status::Ok() : Error(ErrorCode::OBJECT_NOT_FOUND, "no " + r.key);
  }
  Result<msg::RemoveAllReply> RemoveAll(const Empty&) override {
    std::lock_guard<std::mutex> l(mu_);
    msg::RemoveAllReply r{keys_.size()};
    keys_.clear();
    return r;
  }
  Result<msg::ListKeysReply> ListKeys(const msg::ListKeysRequest& r) override {
    std::lock_guard<std::mutex> l(mu_);
    msg::ListKeysReply out;
    for (auto& [k, size] : keys_)
      if (k.rfind(r.prefix, 0) == 0 && out.keys.size() < r.limit) out.keys.push_back({k, size, 1, false});
    return out;
  }
  Result<msg::ClusterStatusReply> ClusterStatus(const Empty&) override {
    return msg::ClusterStatusReply{100, 10, 1, 0, 1, {{"seg", "127.0.0.1:1", 100, 10}}};
  }
  // Counts, then fails: a notification's error must not come back either.
  Status ReleaseLeases(const msg::Batch<msg::KeyRequest>& r) override {
    released += r.size();
    return Error(ErrorCode::INTERNAL_ERROR, "counted");
  }
  std::atomic<uint64_t> released{0};

 private:
  std::mutex mu_;
  std::map<std::string, uint64_t> keys_;
};

template <typename F>
bool WaitUntil(F cond, int timeout_ms = 5000) {
  uint64_t deadline = net::MonotonicUs() + timeout_ms * 1000ull;
  while (!cond()) {
    if (net::MonotonicUs() > deadline) return false;
    std::this_thread::yield();
    ::usleep(1000);  // waiting on another thread's I/O, not on simulated time
  }
  return true;
}

struct TestServer {
  explicit TestServer(std::string token = "", const Clock* clock = nullptr,
                      ReplyGate* gate = nullptr) {
    ServerOptions o;
    o.reply_gate = gate;
    o.address = "127.0.0.1";
    o.port = 0;
    o.auth_token = std::move(token);
    o.clock = clock;
    o.max_connections = 64;
    server = std::make_unique<Server>(o, &handler);
    REQUIRE(server->Start().ok());
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(server->port()); }
  ClientOptions Client(std::string token = "") const {
    ClientOptions o;
    o.master = address();
    o.auth_token = std::move(token);
    o.rpc_timeout_us = 3000000;
    o.retries = 2;
    o.initial_backoff_us = 1000;
    return o;
  }
  bool Idle() const { return server->stats().active == 0; }
  TestHandler handler;
  std::unique_ptr<Server> server;
};

// Bytes a socket has sent that its peer has not acknowledged yet.
inline int Unsent(int fd) {
  int n = -1;
  return ::ioctl(fd, SIOCOUTQ, &n) == 0 ? n : -1;
}

// A raw TCP peer for sending arbitrary bytes.
struct Raw {
  explicit Raw(const std::string& address) {
    auto fd_or = net::ConnectTcp(*net::ParseHostPort(address), 2000000);
    REQUIRE(fd_or.ok());
    fd = *fd_or;
  }
  ~Raw() { ::close(fd); }
  void Send(std::string_view bytes) {
    REQUIRE(net::WriteAll(fd, bytes, net::MonotonicUs() + 2000000).ok());
  }
  void SendFrame(Opcode op, uint64_t id, std::string_view payload, uint8_t version = kProtocolVersion) {
    std::string f(kFrameHeaderBytes, '\0');
    EncodeFrameHeader({version, 0, op, static_cast<uint32_t>(payload.size()), id},
                      reinterpret_cast<uint8_t*>(f.data()));
    Send(f + std::string(payload));
  }
  // Next frame, or an error if the server closed first / nothing came.
  Result<std::pair<FrameHeader, std::string>> Read(int timeout_ms = 3000) {
    uint64_t deadline = net::MonotonicUs() + timeout_ms * 1000ull;
    for (;;) {
      if (buf.size() >= kFrameHeaderBytes) {
        auto h = DecodeFrameHeader(reinterpret_cast<const uint8_t*>(buf.data()), buf.size(), kMaxPayloadBytes);
        if (!h.ok()) return h.status();
        if (buf.size() >= kFrameHeaderBytes + h->payload_bytes) {
          std::string payload = buf.substr(kFrameHeaderBytes, h->payload_bytes);
          buf.erase(0, kFrameHeaderBytes + h->payload_bytes);
          return std::make_pair(*h, payload);
        }
      }
      char tmp[65536];
      auto n = net::ReadSome(fd, tmp, sizeof tmp, deadline);
      if (!n.ok()) return n.status();
      if (*n == 0) return Error(ErrorCode::RPC_FAIL, "closed");
      buf.append(tmp, *n);
    }
  }
  bool ClosedByPeer(int timeout_ms = 3000) {
    for (;;) {
      auto f = Read(timeout_ms);
      if (!f.ok()) return f.status().message() == "closed" || f.status().message().find("recv") != std::string::npos;
    }
  }
  void Handshake() {
    SendFrame(Opcode::kHello, 0, std::string(kNonceBytes, 'n'));
    REQUIRE(Read().ok());
    std::string auth;
    EncodePayload(AuthRequest{}, &auth);
    SendFrame(Opcode::kAuth, 0, auth);
    auto r = Read();
    REQUIRE(r.ok());
    REQUIRE(DecodeReply<AuthReply>(r->second, "auth").ok());
  }
  int fd = -1;
  std::string buf;
};

Status ReplyStatus(const std::string& payload) {
  auto r = DecodeReply<Empty>(payload, "reply");
  return r.ok() ? Status::Ok() : r.status();
}

bool Contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

}  // namespace

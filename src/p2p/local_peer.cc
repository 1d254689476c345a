#include "p2p/local_peer.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "net/unix_socket.h"
#include "transfer/data_protocol.h"
#include "transfer/stream_copy.h"

namespace mc::p2p {

namespace {

using transfer::OpKind;
using transfer::TransferOp;

constexpr uint32_t kHelloMagic = 0x5032504d;  // "MP2P"
constexpr uint32_t kOpCheck = 1;
constexpr uint32_t kOpFd = 2;
constexpr int kListenBacklog = 16;

struct WireHello {
  uint32_t magic = kHelloMagic;
  uint32_t auth_required = 0;
  std::array<uint8_t, transfer::wire::kNonceBytes> nonce{};
};
struct WireHeader {
  uint32_t op = 0;
  uint32_t n = 0;
};
struct WireRange {
  uint64_t addr = 0;
  uint64_t len = 0;
};
struct WireRegion {  // id 0: the range is not inside one registered region
  uint64_t addr = 0;
  uint64_t len = 0;
  uint64_t id = 0;
  uint64_t shareable = 0;
};
struct WireStatus {
  int32_t status = 0;
  uint32_t pad = 0;
  uint64_t len = 0;
};

template <typename T>
std::string_view Bytes(const T& v) {
  return {reinterpret_cast<const char*>(&v), sizeof(T)};
}
template <typename T>
Status Recv(int fd, T* out, int* passed_fd = nullptr) {
  return net::RecvUnix(fd, reinterpret_cast<char*>(out), sizeof(T), passed_fd);
}

bool SameUser(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  return ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == ::getuid();
}

bool IsThisHostV4(in_addr_t a) {
  if ((ntohl(a) >> 24) == 127) return true;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* i = list; i != nullptr && !found; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    found = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr == a;
  }
  ::freeifaddrs(list);
  return found;
}

}  // namespace

std::string LocalPeerSocket(uint16_t rpc_port) {
  return "@mooncake-p2p-" + std::to_string(rpc_port);
}

bool IsLocalHost(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return false;
  bool local = res != nullptr;
  for (addrinfo* r = res; r != nullptr; r = r->ai_next) {
    local = local && IsThisHostV4(reinterpret_cast<sockaddr_in*>(r->ai_addr)->sin_addr.s_addr);
  }
  ::freeaddrinfo(res);
  return local;
}

// ---- the engine's side ----

Result<std::unique_ptr<LocalPeerServer>> LocalPeerServer::Start(
    std::shared_ptr<const MemoryRegistry> registry, uint16_t rpc_port, std::string auth_token,
    uint64_t io_timeout_us) {
  std::unique_ptr<LocalPeerServer> s(new LocalPeerServer());
  s->registry_ = std::move(registry);
  s->auth_token_ = std::move(auth_token);
  s->io_timeout_us_ = io_timeout_us;
  MC_ASSIGN_OR_RETURN(s->listen_fd_, net::ListenUnix(LocalPeerSocket(rpc_port), kListenBacklog));
  s->acceptor_ = std::thread([p = s.get()] { p->AcceptLoop(); });
  return s;
}

LocalPeerServer::~LocalPeerServer() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);  // accept() returns
  if (acceptor_.joinable()) acceptor_.join();
  ::close(listen_fd_);
  std::lock_guard lock(mu_);
  for (auto& c : conns_) ::shutdown(c->fd, SHUT_RDWR);
  for (auto& c : conns_) {
    c->thread.join();
    ::close(c->fd);
  }
}

void LocalPeerServer::AcceptLoop() {
  while (!stopping_) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // shut down
    }
    std::lock_guard lock(mu_);
    std::erase_if(conns_, [](const std::unique_ptr<Conn>& c) {
      if (!c->done) return false;
      c->thread.join();
      ::close(c->fd);
      return true;
    });
    if (stopping_ || conns_.size() >= kMaxLocalPeers || !SameUser(fd)) {
      ::close(fd);
      continue;
    }
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    Conn* raw = c.get();
    c->thread = std::thread([this, raw] { Serve(raw); });
    conns_.push_back(std::move(c));
  }
}

void LocalPeerServer::Serve(Conn* conn) {
  if (net::SetUnixTimeouts(conn->fd, 0, io_timeout_us_).ok() && Handshake(conn->fd)) {
    while (!stopping_ && Answer(conn->fd)) {
    }
  }
  ::shutdown(conn->fd, SHUT_RDWR);
  conn->done = true;
}

bool LocalPeerServer::Handshake(int fd) {
  WireHello hello;
  hello.auth_required = auth_token_.empty() ? 0 : 1;
  if (!transfer::wire::RandomNonce(&hello.nonce).ok()) return false;
  if (!net::SendUnix(fd, Bytes(hello), -1).ok()) return false;
  std::array<uint8_t, transfer::wire::kMacBytes> mac{};
  if (!Recv(fd, &mac).ok()) return false;
  WireStatus reply;
  if (!auth_token_.empty()) {
    const auto want = transfer::wire::AuthMac(auth_token_, hello.nonce);
    if (!transfer::wire::MacEqual(mac.data(), want.data())) {
      reply.status = static_cast<int32_t>(ErrorCode::AUTH_FAILED);
    }
  }
  return net::SendUnix(fd, Bytes(reply), -1).ok() && reply.status == 0;
}

bool LocalPeerServer::Answer(int fd) {
  WireHeader h;
  if (!Recv(fd, &h).ok() || h.n == 0 || h.n > transfer::kMaxBatchOps) return false;
  std::vector<WireRange> ranges(h.n);
  if (!net::RecvUnix(fd, reinterpret_cast<char*>(ranges.data()), h.n * sizeof(WireRange), nullptr)
           .ok()) {
    return false;
  }
  if (h.op == kOpFd) {
    WireStatus st;
    int passed = registry_->DupFd(ranges[0].addr, &st.len);
    if (passed < 0) st.status = static_cast<int32_t>(ErrorCode::INVALID_PARAMS);
    const bool ok = net::SendUnix(fd, Bytes(st), passed).ok();
    if (passed >= 0) ::close(passed);
    return ok;
  }
  if (h.op != kOpCheck) return false;
  std::string out(Bytes(WireStatus{}));
  for (const WireRange& r : ranges) {
    WireRegion w;
    if (auto region = registry_->Find(r.addr, r.len)) {
      w = {region->addr, region->len, region->id, region->shareable ? 1u : 0u};
    }
    out.append(Bytes(w));
  }
  return net::SendUnix(fd, out, -1).ok();
}

// ---- the peer's side ----

namespace {

// Page tables of a fresh mapping are filled a chunk at a time, on the first
// copy that touches it: one madvise(MADV_POPULATE_WRITE) instead of a fault
// per 4 KiB page. On the dev VM a page fault on shared memory costs tens of
// microseconds: a first pass of 4 MiB copies over a 256 MiB memfd mapping
// ran at 0.07-0.08 GB/s faulting, 0.10-0.13 GB/s populating (a C++ loop,
// under load ~16), then ~13 GB/s once mapped. So the first transfers into a
// peer's buffer are slow; the mapping is kept for the next ones.
constexpr uint64_t kPopulateChunkBytes = 2 << 20;

struct Mapping {
  uint8_t* base = nullptr;
  uint64_t len = 0;
  std::unique_ptr<std::atomic<bool>[]> populated;  // per kPopulateChunkBytes
  ~Mapping() {
    if (base != nullptr) ::munmap(base, len);
  }
  void Populate(uint64_t off, uint64_t n) {
    for (uint64_t c = off / kPopulateChunkBytes; c * kPopulateChunkBytes < off + n; ++c) {
      if (populated[c].load(std::memory_order_relaxed)) continue;
      const uint64_t start = c * kPopulateChunkBytes;
      // Best effort: a kernel without it (< 5.14) faults as before.
      (void)::madvise(base + start, std::min(kPopulateChunkBytes, len - start),
                      MADV_POPULATE_WRITE);
      populated[c].store(true, std::memory_order_relaxed);
    }
  }
};

// Moves op's bytes to or from `pid`'s memory at op.remote_offset.
Status ProcessVmCopy(int32_t pid, TransferOp& op) {
  uint64_t done = 0;
  while (done < op.len) {
    iovec local{static_cast<uint8_t*>(op.buffer) + done, op.len - done};
    iovec remote{reinterpret_cast<void*>(op.remote_offset + done), op.len - done};
    const ssize_t n = op.kind == OpKind::kWrite ? ::process_vm_writev(pid, &local, 1, &remote, 1, 0)
                                                : ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n <= 0) {
      return Error(ErrorCode::NOT_SUPPORTED,
                   std::string(op.kind == OpKind::kWrite ? "process_vm_writev" : "process_vm_readv") +
                       " to pid " + std::to_string(pid) + ": " + std::strerror(errno));
    }
    done += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

void MapCopy(Mapping& m, uint64_t region_addr, TransferOp& op) {
  const uint64_t off = op.remote_offset - region_addr;
  m.Populate(off, op.len);
  uint8_t* remote = m.base + off;
  if (op.kind == OpKind::kWrite) {
    transfer::StreamCopy(remote, op.buffer, op.len);
  } else {
    std::memcpy(op.buffer, remote, op.len);
  }
}

}  // namespace

struct LocalPeerTransport::Peer {
  int fd = -1;
  int32_t pid = 0;
  std::mutex mu;  // one request at a time; guards maps
  std::map<uint64_t, std::shared_ptr<Mapping>> maps;  // by region id
  ~Peer() {
    if (fd >= 0) ::close(fd);
  }
  // The mapping of region `id`, asking the engine for its fd the first time.
  Result<std::shared_ptr<Mapping>> Map(uint64_t id, uint64_t need_len) {
    if (auto it = maps.find(id); it != maps.end()) return it->second;
    WireHeader h{kOpFd, 1};
    WireRange r{id, 0};
    std::string req(Bytes(h));
    req.append(Bytes(r));
    MC_RETURN_IF_ERROR(net::SendUnix(fd, req, -1));
    WireStatus st;
    int got = -1;
    MC_RETURN_IF_ERROR(Recv(fd, &st, &got));
    auto m = std::make_shared<Mapping>();
    if (st.status == 0 && got >= 0 && st.len >= need_len) {
      void* p = ::mmap(nullptr, st.len, PROT_READ | PROT_WRITE, MAP_SHARED, got, 0);
      if (p != MAP_FAILED) {
        m->base = static_cast<uint8_t*>(p);
        m->len = st.len;
        m->populated.reset(new std::atomic<bool>[(st.len + kPopulateChunkBytes - 1) /
                                                 kPopulateChunkBytes]());
      }
    }
    if (got >= 0) ::close(got);
    if (m->base == nullptr) return Error(ErrorCode::NOT_SUPPORTED, "region not mappable");
    if (maps.size() >= kMaxMappedRegions) maps.clear();
    maps[id] = m;
    return m;
  }
};

LocalPeerTransport::~LocalPeerTransport() = default;

bool LocalPeerTransport::LocalCached(const std::string& host) {
  {
    std::lock_guard lock(mu_);
    if (auto it = local_.find(host); it != local_.end()) return it->second;
  }
  const bool local = IsLocalHost(host);
  std::lock_guard lock(mu_);
  if (local_.size() >= kMaxKnownHosts) local_.clear();
  local_[host] = local;
  return local;
}

std::shared_ptr<LocalPeerTransport::Peer> LocalPeerTransport::Connect(uint16_t port, Status* why) {
  {
    std::lock_guard lock(mu_);
    if (auto it = peers_.find(port); it != peers_.end()) return it->second;
  }
  auto fd = net::ConnectUnix(LocalPeerSocket(port));
  if (!fd.ok()) {
    *why = Error(ErrorCode::NOT_SUPPORTED, fd.status().message());
    return nullptr;
  }
  auto peer = std::make_shared<Peer>();
  peer->fd = fd.value();
  peer->pid = net::PeerPid(peer->fd);
  if (!SameUser(peer->fd)) {  // never hand our bytes to another user's socket
    *why = Error(ErrorCode::NOT_SUPPORTED, LocalPeerSocket(port) + " belongs to another user");
    return nullptr;
  }
  WireHello hello;
  WireStatus reply;
  Status st = net::SetUnixTimeouts(peer->fd, options_.io_timeout_us, options_.io_timeout_us);
  if (st.ok()) st = Recv(peer->fd, &hello);
  if (st.ok() && hello.magic != kHelloMagic) st = Error(ErrorCode::PROTOCOL_ERROR, "bad hello");
  std::array<uint8_t, transfer::wire::kMacBytes> mac{};
  if (st.ok() && !options_.auth_token.empty()) {
    mac = transfer::wire::AuthMac(options_.auth_token, hello.nonce);
  }
  if (st.ok()) st = net::SendUnix(peer->fd, Bytes(mac), -1);
  if (st.ok()) st = Recv(peer->fd, &reply);
  if (st.ok() && reply.status != 0) {
    st = Error(static_cast<ErrorCode>(reply.status), "the peer refused the same-host handshake");
  }
  if (!st.ok()) {
    *why = st;
    return nullptr;
  }
  std::lock_guard lock(mu_);
  return peers_.try_emplace(port, peer).first->second;
}

void LocalPeerTransport::Drop(uint16_t port, const std::shared_ptr<Peer>& peer) {
  std::lock_guard lock(mu_);
  if (auto it = peers_.find(port); it != peers_.end() && it->second == peer) peers_.erase(it);
}

Status LocalPeerTransport::Batch(std::span<TransferOp> ops) {
  MC_RETURN_IF_ERROR(transfer::ValidateBatch(ops));
  std::map<uint16_t, std::vector<size_t>> groups;
  for (size_t i = 0; i < ops.size(); ++i) {
    ops[i].status = Status::Ok();
    if (LocalCached(ops[i].endpoint->host)) {
      groups[ops[i].endpoint->port].push_back(i);
    } else {
      ops[i].status = Error(ErrorCode::NOT_SUPPORTED, "the peer is not on this host");
    }
  }
  for (auto& [port, which] : groups) {
    Status why;
    auto peer = Connect(port, &why);
    Status st = peer ? RunGroup(peer, ops, which) : why;
    if (!st.ok()) {
      for (size_t i : which) {
        if (ops[i].status.ok()) ops[i].status = st;
      }
      if (peer) Drop(port, peer);
    }
  }
  for (const TransferOp& op : ops) {
    if (!op.status.ok()) return op.status;
  }
  return Status::Ok();
}

Status LocalPeerTransport::RunGroup(const std::shared_ptr<Peer>& peer, std::span<TransferOp> ops,
                                    const std::vector<size_t>& which) {
  WireHeader h{kOpCheck, static_cast<uint32_t>(which.size())};
  std::string req(Bytes(h));
  for (size_t i : which) req.append(Bytes(WireRange{ops[i].remote_offset, ops[i].len}));
  std::vector<WireRegion> regions(which.size());
  std::vector<std::shared_ptr<Mapping>> maps(which.size());
  {
    std::lock_guard lock(peer->mu);
    WireStatus st;
    Status io = net::SendUnix(peer->fd, req, -1);
    if (io.ok()) io = Recv(peer->fd, &st);
    if (io.ok()) {
      io = net::RecvUnix(peer->fd, reinterpret_cast<char*>(regions.data()),
                         regions.size() * sizeof(WireRegion), nullptr);
    }
    if (io.code() == ErrorCode::RPC_TIMEOUT) {
      for (size_t i : which) ops[i].peer_unreachable = true;
      return Error(ErrorCode::TRANSFER_FAIL,
                   "the peer on this host did not answer within the transfer timeout");
    }
    if (!io.ok()) return Error(ErrorCode::NOT_SUPPORTED, io.message());
    for (size_t k = 0; k < which.size(); ++k) {
      if (regions[k].id == 0 || regions[k].shareable == 0) continue;
      auto m = peer->Map(regions[k].id, regions[k].len);
      if (m.ok()) {
        maps[k] = m.value();
      } else if (m.status().code() != ErrorCode::NOT_SUPPORTED) {
        return Error(ErrorCode::NOT_SUPPORTED, m.status().message());  // the stream is lost
      }
    }
  }
  for (size_t k = 0; k < which.size(); ++k) {
    TransferOp& op = ops[which[k]];
    if (regions[k].id == 0) {
      op.status = Error(op.kind == OpKind::kWrite ? ErrorCode::INVALID_WRITE : ErrorCode::INVALID_READ,
                        "range is not inside the peer's registered memory");
    } else if (maps[k]) {
      MapCopy(*maps[k], regions[k].addr, op);
      mapped_.fetch_add(1, std::memory_order_relaxed);
    } else {
      op.status = ProcessVmCopy(peer->pid, op);
      if (op.status.ok()) process_vm_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  return Status::Ok();
}

}  // namespace mc::p2p

#include "clientd/dummy_server.h"

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "client/client.h"
#include "client/dummy_forgets.h"
#include "client/dummy_journal.h"
#include "client/dummy_wire.h"
#include "common/log.h"
#include "net/socket.h"
#include "net/unix_socket.h"
#include "proto/dummy_ops.h"

namespace mc::clientd {

namespace {

using proto::DummyOp;
using proto::DummyOpTraits;

// How often the acceptor looks at the stop flag.
constexpr int kAcceptPollMs = 200;
// Connections waiting to be accepted.
constexpr int kListenBacklog = 64;
// A reply the dummy does not read within this long ends its session.
constexpr uint64_t kReplySendTimeoutUs = 30'000'000;
// No limit on the wait for a dummy's next request.
constexpr uint64_t kNoTimeout = 0;

// The pool a dummy maps: this side's mapping and its size.
struct Pool {
  uint8_t* base = nullptr;
  uint64_t size = 0;
};

// The spans of `objects` in `pool`; INVALID_PARAMS for a range outside it.
template <typename Parts>
Result<std::vector<Parts>> Spans(const std::vector<msg::PoolParts>& objects, const Pool& pool) {
  std::vector<Parts> out(objects.size());
  for (size_t i = 0; i < objects.size(); ++i) {
    for (const msg::PoolRange& r : objects[i].parts) {
      if (r.offset > pool.size || r.size_bytes > pool.size - r.offset) {
        return Error(ErrorCode::INVALID_PARAMS, "range outside the dummy's pool");
      }
      out[i].emplace_back(pool.base + r.offset, r.size_bytes);
    }
  }
  return out;
}

// Decodes the request of `op`, runs `fn` on it and encodes its result.
template <DummyOp op, typename F>
std::string Handle(const std::string& payload, F&& fn) {
  typename DummyOpTraits<op>::Request req;
  std::string out;
  if (Status st = proto::DecodePayload(payload, &req, DummyOpTraits<op>::kName); !st.ok()) {
    proto::EncodeErrorReply(st, &out);
    return out;
  }
  Result<typename DummyOpTraits<op>::Reply> r = fn(req);
  proto::EncodeReply(r, &out);
  return out;
}

template <typename T, typename In, typename Wrap>
msg::Batch<msg::BatchItem<T>> Items(std::vector<Result<In>>&& in, Wrap&& wrap) {
  msg::Batch<msg::BatchItem<T>> out(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].ok()) out[i].value = wrap(*in[i]);
    else out[i].status = in[i].status();
  }
  return out;
}

msg::DummyU64 U64(uint64_t v) { return msg::DummyU64{v}; }

Result<msg::Batch<Status>> Put(client::Client& c, const msg::DummyPutRequest& req,
                               const Pool& pool) {
  if (req.keys.size() != req.objects.size()) {
    return Error(ErrorCode::INVALID_PARAMS, "one object per key");
  }
  MC_ASSIGN_OR_RETURN(auto parts, Spans<client::Client::ConstParts>(req.objects, pool));
  msg::PutOptions o = req.options;
  o.placement = req.placement;
  o.upsert = req.upsert;
  return c.BatchPutParts(req.keys, parts, o);
}

Result<msg::Batch<msg::BatchItem<msg::DummyU64>>> GetInto(client::Client& c,
                                                         const msg::DummyGetRequest& req,
                                                         const Pool& pool) {
  if (req.keys.size() != req.objects.size()) {
    return Error(ErrorCode::INVALID_PARAMS, "one buffer per key");
  }
  MC_ASSIGN_OR_RETURN(auto parts, Spans<client::Client::Parts>(req.objects, pool));
  return Items<msg::DummyU64>(c.BatchGetIntoParts(req.keys, parts), U64);
}

// What a get answers, and where each key it read lives now (if cached and
// same-host), for the dummy to read it itself next time. Each key's forget
// mark is read before its location: a change that lands after the mark
// bumps it (client/dummy_forgets.h).
Result<msg::DummyGetLearnReply> GetIntoLearn(client::Client& c, const msg::DummyGetRequest& req,
                                             const Pool& pool, const client::ForgetTable& forgets) {
  MC_ASSIGN_OR_RETURN(auto sizes, GetInto(c, req, pool));
  msg::DummyGetLearnReply out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (!sizes[i].status.ok()) continue;
    const uint64_t mark = client::ForgetMark(forgets, req.keys[i]);
    auto e = c.CachedLocation(req.keys[i]);
    if (!e || e->endpoint.shm_path.empty()) continue;
    out.locations.push_back({static_cast<uint32_t>(i), e->generation, e->size_bytes,
                             e->endpoint.shm_path, e->store, e->offset, e->grant.offset,
                             e->grant.size_bytes, e->grant.expiry_unix_ms, e->grant.signature,
                             e->seal, e->expiry_unix_ms, mark});
  }
  out.sizes = std::move(sizes);
  return out;
}

// The replica operations and the counters.
std::string DispatchTasks(client::Client& c, const client::DummyFrame& f) {
  switch (static_cast<DummyOp>(f.opcode)) {
    case DummyOp::kDummyCreateCopyTask:
      return Handle<DummyOp::kDummyCreateCopyTask>(
          f.payload, [&](auto& r) { return c.CreateCopyTask(r.key, r.targets); });
    case DummyOp::kDummyCreateMoveTask:
      return Handle<DummyOp::kDummyCreateMoveTask>(
          f.payload, [&](auto& r) { return c.CreateMoveTask(r.key, r.source, r.target); });
    case DummyOp::kDummyRunTask:
      return Handle<DummyOp::kDummyRunTask>(f.payload, [&](auto& r) {
        Status st = c.RunTask(r.task);
        return st.ok() ? Result(proto::Empty{}) : Result<proto::Empty>(st);
      });
    case DummyOp::kDummyQueryTask:
      return Handle<DummyOp::kDummyQueryTask>(f.payload,
                                              [&](auto& r) { return c.QueryTask(r.task); });
    case DummyOp::kDummyReplicaClear:
      return Handle<DummyOp::kDummyReplicaClear>(f.payload, [&](auto& r) {
        auto cleared = c.BatchReplicaClear(r.keys, r.segment_name);
        if (!cleared.ok()) return Result<msg::ReplicaClearReply>(cleared.status());
        return Result(msg::ReplicaClearReply{std::move(*cleared)});
      });
    case DummyOp::kDummyRemoveByRegex:
      return Handle<DummyOp::kDummyRemoveByRegex>(f.payload, [&](auto& r) {
        auto n = c.RemoveByRegex(r.pattern, r.force);
        if (!n.ok()) return Result<msg::RemoveByRegexReply>(n.status());
        return Result(msg::RemoveByRegexReply{*n});
      });
    case DummyOp::kDummyPathCounts:
      return Handle<DummyOp::kDummyPathCounts>(f.payload, [&](auto&) {
        auto p = c.path_counts();
        return Result(msg::DummyPathCounts{p.same_host, p.rdma, p.tcp, p.tcp_fallback,
                                           c.last_transfer_path()});
      });
    default: {
      std::string out;
      proto::EncodeErrorReply(Error(ErrorCode::NOT_SUPPORTED,
                                    "unknown dummy operation " + std::to_string(f.opcode)),
                              &out);
      return out;
    }
  }
}

// Operations that may change keys they do not name: every dummy's
// locations are forgotten once one ran.
bool ChangesAnyKey(uint16_t opcode) {
  switch (static_cast<DummyOp>(opcode)) {
    case DummyOp::kDummyRemoveAll:
    case DummyOp::kDummyRemoveByRegex:
    case DummyOp::kDummyReplicaClear:
    case DummyOp::kDummyRunTask:
      return true;
    default:
      return false;
  }
}

// Runs `fn` (a call changing `keys`), then bumps their forget slots.
template <typename F>
auto ThenForget(client::ForgetTable& t, const std::vector<std::string>& keys, F&& fn) {
  auto out = fn();
  for (const std::string& k : keys) client::BumpForget(t, k);
  return out;
}

// The reply payload of one request (the Client's answer, or an error).
std::string Dispatch(client::Client& c, const client::DummyFrame& f, const Pool& pool,
                     client::ForgetTable& forgets) {
  using K = msg::DummyKeysRequest;
  switch (static_cast<DummyOp>(f.opcode)) {
    case DummyOp::kDummyPut:
      return Handle<DummyOp::kDummyPut>(f.payload, [&](auto& r) {
        return ThenForget(forgets, r.keys, [&] { return Put(c, r, pool); });
      });
    case DummyOp::kDummyGetInto:
      return Handle<DummyOp::kDummyGetInto>(f.payload,
                                            [&](auto& r) { return GetInto(c, r, pool); });
    case DummyOp::kDummyGetIntoLearn:
      return Handle<DummyOp::kDummyGetIntoLearn>(
          f.payload, [&](auto& r) { return GetIntoLearn(c, r, pool, forgets); });
    case DummyOp::kDummyReportAccesses:
      return Handle<DummyOp::kDummyReportAccesses>(f.payload, [&](auto& r) {
        c.CountHits(r.accesses);
        return Result(proto::Empty{});
      });
    case DummyOp::kDummyLocate:
      return Handle<DummyOp::kDummyLocate>(f.payload, [&](const K& r) {
        if (r.keys.size() != 1) return Result<msg::GetReplicaListReply>(
            Error(ErrorCode::INVALID_PARAMS, "locate takes one key"));
        return c.Locate(r.keys[0]);
      });
    case DummyOp::kDummyExists:
      return Handle<DummyOp::kDummyExists>(f.payload, [&](const K& r) {
        return Result(Items<bool>(c.BatchExists(r.keys), [](bool b) { return b; }));
      });
    case DummyOp::kDummyRemove:
      return Handle<DummyOp::kDummyRemove>(f.payload, [&](const K& r) {
        return ThenForget(forgets, r.keys, [&] { return Result(c.BatchRemove(r.keys, r.force)); });
      });
    case DummyOp::kDummySize:
      return Handle<DummyOp::kDummySize>(f.payload, [&](const K& r) {
        std::vector<Result<uint64_t>> sizes;
        for (const auto& k : r.keys) sizes.push_back(c.Size(k));
        return Result(Items<msg::DummyU64>(std::move(sizes), U64));
      });
    case DummyOp::kDummyRemoveAll:
      return Handle<DummyOp::kDummyRemoveAll>(f.payload, [&](auto& r) {
        auto n = c.RemoveAll(r.force);
        return n.ok() ? Result(msg::RemoveAllReply{*n}) : Result<msg::RemoveAllReply>(n.status());
      });
    case DummyOp::kDummyList:
      return Handle<DummyOp::kDummyList>(f.payload, [&](auto& r) { return c.List(r); });
    case DummyOp::kDummyClusterStatus:
      return Handle<DummyOp::kDummyClusterStatus>(f.payload,
                                                  [&](auto&) { return c.ClusterStatus(); });
    default:
      return DispatchTasks(c, f);
  }
}

}  // namespace

struct DummyServer::Session {
  int sock = -1;
  int32_t pid = 0;
  bool same_user = false;  // the dummy runs as this process's user
  Pool pool;
  std::unique_ptr<client::DummyJournal> journal;  // its own puts under way
  std::thread thread;
  std::atomic<bool> done{false};
};

Result<std::unique_ptr<DummyServer>> DummyServer::Start(client::Client& client,
                                                        std::string hostname,
                                                        const DummyServerOptions& options) {
  if (options.max_dummies == 0 || options.max_dummies > kMaxDummies) {
    return Error(ErrorCode::INVALID_PARAMS,
                 "max dummies must be 1.." + std::to_string(kMaxDummies));
  }
  std::unique_ptr<DummyServer> s(new DummyServer(client, std::move(hostname), options));
  MC_ASSIGN_OR_RETURN(s->forgets_, client::CreateForgetTable(&s->forgets_fd_));
  MC_ASSIGN_OR_RETURN(s->listen_fd_, net::ListenUnix(options.socket_path, kListenBacklog));
  s->acceptor_ = std::thread([p = s.get()] { p->AcceptLoop(); });
  return s;
}

DummyServer::DummyServer(client::Client& client, std::string hostname,
                         const DummyServerOptions& o)
    : client_(client), hostname_(std::move(hostname)), options_(o) {}

DummyServer::~DummyServer() {
  Stop();
  client::UnmapForgetTable(forgets_);
  if (forgets_fd_ >= 0) ::close(forgets_fd_);
}

void DummyServer::Stop() {
  if (stopping_.exchange(true)) return;
  if (acceptor_.joinable()) acceptor_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (!options_.socket_path.empty() && options_.socket_path[0] != '@') {
    ::unlink(options_.socket_path.c_str());
  }
  {
    std::lock_guard lock(mu_);
    for (auto& s : sessions_) ::shutdown(s->sock, SHUT_RDWR);  // wakes their reads
  }
  Reap(true);
}

void DummyServer::Reap(bool all) {
  std::list<std::unique_ptr<Session>> ended;
  {
    std::lock_guard lock(mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (all || (*it)->done.load()) {
        ended.push_back(std::move(*it));
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& s : ended) s->thread.join();
}

void DummyServer::AcceptLoop() {
  // Held while this thread serves: the dummies' sign that this process lives.
  const Status held = client::HoldAlive(*forgets_);
  if (!held.ok()) {
    MC_LOG(WARN) << "dummies will not read directly: " << held.ToString();
  }
  AcceptUntilStopped();
  if (held.ok()) client::ReleaseAlive(*forgets_);
}

namespace {

// The cluster's token goes only to a dummy of this process's own user, who
// could read it from this process's configuration anyway.
bool SameUser(int sock) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  return ::getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
         cred.uid == ::geteuid();
}

}  // namespace

void DummyServer::AcceptUntilStopped() {
  while (!stopping_.load()) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, kAcceptPollMs) <= 0) continue;
    int sock = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (sock < 0) continue;
    Reap(false);
    std::lock_guard lock(mu_);
    if (sessions_.size() >= options_.max_dummies) {
      MC_LOG(WARN) << "dummy refused: " << options_.max_dummies << " already attached";
      ::close(sock);
      continue;
    }
    auto s = std::make_unique<Session>();
    s->sock = sock;
    s->pid = net::PeerPid(sock);
    s->same_user = SameUser(sock);
    Session* raw = s.get();
    sessions_.push_back(std::move(s));
    raw->thread = std::thread([this, raw] { Serve(raw); });
  }
}

namespace {

void SendError(int sock, const client::DummyFrame& req, const Status& st) {
  client::DummyFrame r{req.opcode, true, req.request_id, {}, -1};
  proto::EncodeErrorReply(st, &r.payload);
  (void)client::SendDummyFrame(sock, r);
}

// A fresh pool of `size` bytes: its fd (to pass) and this side's mapping.
Result<int> MakePool(uint64_t size, Pool* pool) {
  int fd = ::memfd_create("mooncake-dummy-pool", MFD_CLOEXEC);
  if (fd < 0) return Error(ErrorCode::INTERNAL_ERROR, std::string("memfd_create: ") + std::strerror(errno));
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    ::close(fd);
    return Error(ErrorCode::NO_AVAILABLE_HANDLE, std::string("pool of ") + std::to_string(size) +
                                                     " bytes: " + std::strerror(errno));
  }
  void* at = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (at == MAP_FAILED) {
    ::close(fd);
    return Error(ErrorCode::NO_AVAILABLE_HANDLE, std::string("mmap of the pool: ") + std::strerror(errno));
  }
  pool->base = static_cast<uint8_t*>(at);
  pool->size = size;
  return fd;
}

}  // namespace

void DummyServer::Serve(Session* s) {
  client::DummyFrame f;
  Status st = net::SetUnixTimeouts(s->sock, kNoTimeout, kReplySendTimeoutUs);
  if (st.ok()) st = client::RecvDummyFrame(s->sock, &f);
  if (f.fd >= 0) ::close(f.fd);
  msg::DummyAttachRequest attach;
  if (st.ok() && f.opcode != static_cast<uint16_t>(DummyOp::kDummyAttach)) {
    st = Error(ErrorCode::PROTOCOL_ERROR, "the first request must be DummyAttach");
  }
  if (st.ok()) st = proto::DecodePayload(f.payload, &attach, "DummyAttach");
  if (st.ok() && attach.version != msg::kDummyProtocolVersion) {
    st = Error(ErrorCode::PROTOCOL_ERROR, "dummy protocol version " +
                                              std::to_string(attach.version) + ", this client speaks " +
                                              std::to_string(msg::kDummyProtocolVersion));
  }
  const uint64_t size = attach.pool_size_bytes;
  bool reserved = false;
  if (st.ok()) {
    uint64_t used = pool_bytes_.fetch_add(size);
    reserved = true;
    if (size == 0 || used + size > options_.max_pool_bytes || used + size < used) {
      st = Error(ErrorCode::NO_AVAILABLE_HANDLE,
                 "dummy pool of " + std::to_string(size) + " bytes is over the budget (" +
                     std::to_string(options_.max_pool_bytes - std::min(used, options_.max_pool_bytes)) +
                     " bytes left)");
    }
  }
  int fd = -1;
  if (st.ok()) {
    auto made = MakePool(size, &s->pool);
    if (made.ok()) fd = *made; else st = made.status();
  }
  if (st.ok()) st = client_.RegisterBuffer(s->pool.base, size);
  if (st.ok()) {
    client::DummyFrame r{f.opcode, true, f.request_id, {}, fd};
    proto::EncodeReply(Result(msg::DummyAttachReply{size, client_.id(), hostname_}), &r.payload);
    attached_.fetch_add(1);
    st = client::SendDummyFrame(s->sock, r);
    if (st.ok()) {
      MC_LOG(INFO) << "dummy pid " << s->pid << " attached: pool of " << size << " bytes";
      ServeRequests(s);
      RevokeUnfinishedPuts(s);
    }
    attached_.fetch_sub(1);
  } else if (f.opcode != 0) {
    MC_LOG(WARN) << "dummy pid " << s->pid << " refused: " << st.ToString();
    if (reserved) pool_bytes_.fetch_sub(size);  // before the dummy hears of it
    reserved = false;
    SendError(s->sock, f, st);
  }
  if (fd >= 0) ::close(fd);
  if (s->pool.base != nullptr) {
    (void)client_.UnregisterBuffer(s->pool.base);
    ::munmap(s->pool.base, s->pool.size);
  }
  if (reserved) pool_bytes_.fetch_sub(size);
  ::close(s->sock);
  s->done.store(true);
}

void DummyServer::ServeRequests(Session* s) {
  for (;;) {
    client::DummyFrame f;
    Status st = client::RecvDummyFrame(s->sock, &f);
    const int fd = f.fd;  // only DummyDirectPuts brings one (its journal)
    if (fd >= 0 && (!st.ok() || f.opcode != static_cast<uint16_t>(DummyOp::kDummyDirectPuts))) {
      ::close(fd);
    }
    if (!st.ok()) {
      // The dummy closed or died: everything it had in flight has ended
      // (calls are sequential), so its pool can go.
      MC_LOG(INFO) << "dummy pid " << s->pid << " detached (" << st.message()
                   << "): pool of " << s->pool.size << " bytes released";
      return;
    }
    client::DummyFrame r{f.opcode, true, f.request_id, {}, -1};
    if (f.opcode == static_cast<uint16_t>(DummyOp::kDummyForgetTable)) {
      // The table rides with the reply; the dummy maps it read-only.
      proto::EncodeReply(Result(msg::DummyU64{sizeof(client::ForgetTable)}), &r.payload);
      r.fd = forgets_fd_;
    } else if (f.opcode == static_cast<uint16_t>(DummyOp::kDummyDirectPuts)) {
      r.payload = TakeJournal(s, fd);
    } else {
      r.payload = Dispatch(client_, f, s->pool, *forgets_);
      if (ChangesAnyKey(f.opcode)) client::BumpForgetAll(*forgets_);
    }
    st = client::SendDummyFrame(s->sock, r);
    if (!st.ok()) {
      MC_LOG(INFO) << "dummy pid " << s->pid << " gone before its reply (" << st.message()
                   << "): pool of " << s->pool.size << " bytes released";
      return;
    }
  }
}

}  // namespace mc::clientd

namespace mc::clientd {

std::string DummyServer::TakeJournal(Session* s, int fd) {
  std::string out;
  auto journal = fd >= 0 ? client::DummyJournal::Map(fd)
                         : Result<std::unique_ptr<client::DummyJournal>>(
                               Error(ErrorCode::INVALID_PARAMS, "DummyDirectPuts without a journal"));
  if (fd >= 0) ::close(fd);
  if (options_.direct_puts.master.empty() || !s->same_user) {
    proto::EncodeErrorReply(Error(ErrorCode::NOT_SUPPORTED, "puts come through this client"), &out);
  } else if (!journal.ok()) {
    proto::EncodeErrorReply(journal.status(), &out);
  } else {
    s->journal = std::move(*journal);
    proto::EncodeReply(Result(options_.direct_puts), &out);
  }
  return out;
}

// After the dummy's connection ended: its process is gone (or closed), so
// nothing writes the journal any more.
void DummyServer::RevokeUnfinishedPuts(Session* s) {
  if (s->journal == nullptr) return;
  auto keys = s->journal->Pending();
  if (!keys.ok()) {
    MC_LOG(WARN) << "dummy pid " << s->pid << ": put journal unreadable: " << keys.status().ToString();
    return;
  }
  if (keys->empty()) return;
  std::vector<Status> revoked = client_.RevokePuts(s->journal->owner(), *keys);
  size_t n = 0;
  Status other;  // a put that had ended, or had not started, is not revoked
  for (const Status& st : revoked) {
    if (st.ok()) ++n;
    else other = st;
  }
  MC_LOG(INFO) << "dummy pid " << s->pid << " ended mid-put: " << n << " of " << keys->size()
               << " puts revoked" << (other.ok() ? "" : " (others: " + other.ToString() + ")");
  for (const std::string& k : *keys) client::BumpForget(*forgets_, k);
}

}  // namespace mc::clientd

// The dummy-client protocol end to end in one process: a DummyClient (the
// engine rank's side) against a DummyServer over a real Unix socket, with
// a Client of in-memory objects behind the server.
#include "clientd/dummy_server.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "client/client.h"
#include "client/dummy_client.h"
#include "client/dummy_journal.h"
#include "client/dummy_wire.h"
#include "net/unix_socket.h"
#include "proto/dummy_ops.h"

namespace mc::clientd {
namespace {

// Objects in a map; records whether the bytes of each put came from memory
// registered with it (the pool), i.e. were not copied on the way.
class MapClient final : public client::Client {
 public:
  std::vector<Status> BatchPutParts(const std::vector<std::string>& keys,
                                    const std::vector<ConstParts>& parts,
                                    const msg::PutOptions& o) override {
    std::lock_guard lock(mu);
    std::vector<Status> out;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (objects.count(keys[i]) && !o.upsert) {
        out.push_back(Error(ErrorCode::OBJECT_ALREADY_EXISTS, keys[i]));
        continue;
      }
      std::vector<uint8_t> v;
      for (auto p : parts[i]) {
        from_registered = from_registered && (p.empty() || InRegistered(p.data(), p.size()));
        v.insert(v.end(), p.begin(), p.end());
      }
      objects[keys[i]] = v;
      out.push_back(Status::Ok());
    }
    return out;
  }
  std::vector<Result<uint64_t>> BatchGetIntoParts(const std::vector<std::string>& keys,
                                                  const std::vector<Parts>& parts) override {
    std::lock_guard lock(mu);
    std::vector<Result<uint64_t>> out;
    for (size_t i = 0; i < keys.size(); ++i) {
      auto it = objects.find(keys[i]);
      if (it == objects.end()) {
        out.emplace_back(Error(ErrorCode::OBJECT_NOT_FOUND, keys[i]));
        continue;
      }
      uint64_t room = 0, at = 0;
      for (auto p : parts[i]) room += p.size();
      if (room < it->second.size()) {
        out.emplace_back(Error(ErrorCode::BUFFER_OVERFLOW, keys[i]));
        continue;
      }
      for (auto p : parts[i]) {
        const uint64_t n = std::min<uint64_t>(p.size(), it->second.size() - at);
        std::memcpy(p.data(), it->second.data() + at, n);
        at += n;
      }
      out.emplace_back(uint64_t{it->second.size()});
    }
    return out;
  }
  Result<uint64_t> Size(const std::string& key) override {
    std::lock_guard lock(mu);
    auto it = objects.find(key);
    if (it == objects.end()) return Error(ErrorCode::OBJECT_NOT_FOUND, key);
    return uint64_t{it->second.size()};
  }
  std::vector<Result<bool>> BatchExists(const std::vector<std::string>& keys) override {
    std::lock_guard lock(mu);
    std::vector<Result<bool>> out;
    for (const auto& k : keys) out.emplace_back(objects.count(k) == 1);
    return out;
  }
  std::vector<Status> BatchRemove(const std::vector<std::string>& keys, bool) override {
    std::lock_guard lock(mu);
    std::vector<Status> out;
    for (const auto& k : keys) {
      out.push_back(objects.erase(k) ? Status::Ok() : Error(ErrorCode::OBJECT_NOT_FOUND, k));
    }
    return out;
  }
  Result<uint64_t> RemoveAll(bool) override {
    std::lock_guard lock(mu);
    uint64_t n = objects.size();
    objects.clear();
    return n;
  }
  Status RegisterBuffer(void* addr, uint64_t len) override {
    std::lock_guard lock(mu);
    registered[reinterpret_cast<uintptr_t>(addr)] = len;
    return Status::Ok();
  }
  Status UnregisterBuffer(void* addr) override {
    std::lock_guard lock(mu);
    registered.erase(reinterpret_cast<uintptr_t>(addr));
    return Status::Ok();
  }
  msg::ClientId id() const override { return {1, 2}; }
  std::vector<Status> RevokePuts(const msg::ClientId& owner,
                                 const std::vector<std::string>& keys) override {
    std::lock_guard lock(mu);
    revoked_by = owner;
    revoked.insert(revoked.end(), keys.begin(), keys.end());
    return std::vector<Status>(keys.size(), Status::Ok());
  }

  // The rest is not used by these tests.
  Status Put(const std::string&, std::span<const uint8_t>, const msg::PutOptions&) override { return No(); }
  Result<std::vector<uint8_t>> Get(const std::string&) override { return No(); }
  Result<uint64_t> GetInto(const std::string&, std::span<uint8_t>) override { return No(); }
  Result<msg::GetReplicaListReply> Locate(const std::string&) override { return No(); }
  Result<bool> Exists(const std::string&) override { return No(); }
  Status Remove(const std::string&, bool) override { return No(); }
  Result<msg::ListKeysReply> List(const msg::ListKeysRequest&) override { return No(); }
  Result<msg::ClusterStatusReply> ClusterStatus() override { return No(); }
  std::vector<Status> BatchPut(const std::vector<std::string>& k,
                               const std::vector<std::span<const uint8_t>>&,
                               const msg::PutOptions&) override { return {k.size(), No()}; }
  std::vector<Result<std::vector<uint8_t>>> BatchGet(const std::vector<std::string>&) override { return {}; }
  std::vector<Result<uint64_t>> BatchGetInto(const std::vector<std::string>&,
                                             const std::vector<std::span<uint8_t>>&) override { return {}; }
  std::string last_transfer_path() const override { return "same-host"; }
  PathCounts path_counts() const override { return {}; }
  Result<msg::TaskId> CreateCopyTask(const std::string&, const std::vector<std::string>&) override { return No(); }
  Result<msg::TaskId> CreateMoveTask(const std::string&, const std::string&, const std::string&) override { return No(); }
  Status RunTask(const msg::TaskId&) override { return No(); }
  Result<msg::TaskInfo> QueryTask(const msg::TaskId&) override { return No(); }
  Result<std::vector<std::string>> BatchReplicaClear(const std::vector<std::string>&, const std::string&) override { return No(); }
  Result<uint64_t> RemoveByRegex(const std::string&, bool) override { return No(); }

  std::mutex mu;
  std::map<std::string, std::vector<uint8_t>> objects;
  std::map<uintptr_t, uint64_t> registered;
  bool from_registered = true;
  msg::ClientId revoked_by;
  std::vector<std::string> revoked;

 private:
  static Status No() { return Error(ErrorCode::NOT_SUPPORTED, "not in this fake"); }
  bool InRegistered(const void* p, size_t n) const {
    auto a = reinterpret_cast<uintptr_t>(p);
    for (auto [base, len] : registered) {
      if (a >= base && a - base <= len && n <= len - (a - base)) return true;
    }
    return false;
  }
};

std::string SocketPath() {
  static std::atomic<int> n{0};
  return "@mc_dummy_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++);
}

constexpr uint64_t kPool = 1 << 20;

// Polls (never sleeps) until `done` or five seconds passed: the server's
// thread notices a closed socket on its own schedule.
template <typename F>
bool Eventually(F&& done) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

std::unique_ptr<DummyServer> Serve(client::Client& c, const DummyServerOptions& o) {
  auto s = DummyServer::Start(c, "host:1", o);
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  return std::move(*s);
}

std::unique_ptr<client::DummyClient> Attach(const std::string& path, uint64_t pool = kPool) {
  auto d = client::DummyClient::Connect({path, pool});
  REQUIRE_MESSAGE(d.ok(), d.status().ToString());
  return std::move(*d);
}

TEST_CASE("a put from the pool reaches the client without a copy and reads back") {
  MapClient mc;
  const std::string path = SocketPath();
  auto server = Serve(mc, {path});
  auto d = Attach(path);
  CHECK(d->hostname() == "host:1");
  CHECK(server->attached() == 1);
  auto* buf = static_cast<uint8_t*>(d->Alloc(4096));
  REQUIRE(buf != nullptr);
  for (int i = 0; i < 4096; ++i) buf[i] = static_cast<uint8_t>(i * 7);
  REQUIRE(d->Put("k", {buf, 4096}, {}).ok());
  CHECK(mc.from_registered);
  auto* back = static_cast<uint8_t*>(d->Alloc(4096));
  auto n = d->GetInto("k", {back, 4096});
  REQUIRE(n.ok());
  CHECK(*n == 4096);
  CHECK(std::memcmp(buf, back, 4096) == 0);
  CHECK(d->Put("k", {buf, 4096}, {}).code() == ErrorCode::OBJECT_ALREADY_EXISTS);
  CHECK(d->GetInto("k", {back, 100}).status().code() == ErrorCode::BUFFER_OVERFLOW);
  CHECK(d->GetInto("missing", {back, 100}).status().code() == ErrorCode::OBJECT_NOT_FOUND);
}

TEST_CASE("memory outside the pool is staged through it and every call answers as the client") {
  MapClient mc;
  const std::string path = SocketPath();
  auto server = Serve(mc, {path});
  auto d = Attach(path);
  std::vector<uint8_t> a(10000, 'a'), b(3, 'b');
  auto st = d->BatchPut({"a", "b"}, {a, b}, {});
  CHECK(st[0].ok());
  CHECK(st[1].ok());
  auto got = d->BatchGet({"a", "b", "c"});
  REQUIRE(got[0].ok());
  CHECK(*got[0] == a);
  CHECK(*got[1] == b);
  CHECK(got[2].status().code() == ErrorCode::OBJECT_NOT_FOUND);
  std::vector<uint8_t> p1(6000), p2(6000);
  auto parts = d->BatchGetIntoParts({"a"}, {{p1, p2}});
  REQUIRE(parts[0].ok());
  CHECK(*parts[0] == 10000);
  CHECK(p2[3999] == 'a');
  CHECK(p2[4000] == 0);
  CHECK(*d->Exists("a"));
  CHECK_FALSE(*d->Exists("c"));
  CHECK(*d->Size("a") == 10000);
  CHECK(d->Remove("b", false).ok());
  CHECK(*d->RemoveAll(false) == 1);
  CHECK(d->pool_size_bytes() == kPool);
  // Staging ranges went back to the pool.
  CHECK(d->Alloc(kPool) != nullptr);
}

TEST_CASE("a dummy that goes away gives its whole pool back") {
  MapClient mc;
  const std::string path = SocketPath();
  auto server = Serve(mc, {path});
  auto d1 = Attach(path);
  auto d2 = Attach(path);
  CHECK(server->attached() == 2);
  CHECK(server->pool_bytes() == 2 * kPool);
  CHECK(mc.registered.size() == 2);
  d1.reset();
  CHECK(Eventually([&] { return server->pool_bytes() == kPool; }));
  CHECK(server->attached() == 1);
  std::vector<uint8_t> v(10, 'x');
  CHECK(d2->Put("still", v, {}).ok());
  d2.reset();
  CHECK(Eventually([&] { return server->attached() == 0 && server->pool_bytes() == 0; }));
  std::lock_guard lock(mc.mu);
  CHECK(mc.registered.empty());
}

TEST_CASE("calls fail at once while the client is gone and work again once it is back") {
  MapClient mc;
  const std::string path = SocketPath();
  auto server = Serve(mc, {path});
  auto d = Attach(path);
  auto* buf = static_cast<uint8_t*>(d->Alloc(64));
  server->Stop();
  server.reset();
  auto t0 = std::chrono::steady_clock::now();
  Status st = d->Put("k", {buf, 64}, {});
  CHECK(st.code() == ErrorCode::RPC_FAIL);
  CHECK(st.message().find("is gone") != std::string::npos);
  CHECK(d->Exists("k").status().code() == ErrorCode::RPC_FAIL);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  server = Serve(mc, {path});
  std::memset(buf, 'z', 64);  // written while the client was away
  REQUIRE(d->Put("k", {buf, 64}, {}).ok());  // the same pointer, now in the new pool
  CHECK(mc.from_registered);
  CHECK(mc.objects["k"] == std::vector<uint8_t>(64, 'z'));
}

TEST_CASE("a pool over the budget is refused with NO_AVAILABLE_HANDLE") {
  MapClient mc;
  const std::string path = SocketPath();
  auto server = Serve(mc, {path, 3 * kPool / 2});
  auto d1 = Attach(path);
  auto d2 = client::DummyClient::Connect({path, kPool});
  REQUIRE_FALSE(d2.ok());
  CHECK(d2.status().code() == ErrorCode::NO_AVAILABLE_HANDLE);
  CHECK(server->pool_bytes() == kPool);
}

TEST_CASE("the socket name follows the reference: @mooncake_client_PORT.sock") {
  CHECK(*client::DummySocketPath("127.0.0.1:50052") == "@mooncake_client_50052.sock");
  CHECK(client::DummySocketPath("localhost").status().code() == ErrorCode::INVALID_PARAMS);
}

// One request on a raw connection: what a dummy's side sends, with `fd`.
template <proto::DummyOp op>
Result<typename proto::DummyOpTraits<op>::Reply> Ask(
    int sock, const typename proto::DummyOpTraits<op>::Request& req, int fd = -1,
    int* got_fd = nullptr) {
  client::DummyFrame f{static_cast<uint16_t>(op), false, 1, {}, fd};
  proto::EncodePayload(req, &f.payload);
  MC_RETURN_IF_ERROR(client::SendDummyFrame(sock, f));
  client::DummyFrame r;
  MC_RETURN_IF_ERROR(client::RecvDummyFrame(sock, &r));
  if (got_fd != nullptr) *got_fd = r.fd;
  else if (r.fd >= 0) ::close(r.fd);
  return proto::DecodeReply<typename proto::DummyOpTraits<op>::Reply>(r.payload, "test");
}

// A raw dummy attached to `path` (its pool's descriptor closed at once).
int RawAttach(const std::string& path) {
  auto sock = net::ConnectUnix(path);
  REQUIRE(sock.ok());
  int pool_fd = -1;
  auto a = Ask<proto::DummyOp::kDummyAttach>(*sock, {msg::kDummyProtocolVersion, kPool}, -1,
                                             &pool_fd);
  REQUIRE_MESSAGE(a.ok(), a.status().ToString());
  ::close(pool_fd);
  return *sock;
}

TEST_CASE("a dummy gone mid-put has the puts its journal names revoked as their owner") {
  MapClient mc;
  const std::string path = SocketPath();
  DummyServerOptions o{path};
  o.direct_puts.master = "127.0.0.1:50051";
  o.direct_puts.auth_token = "t0ken";
  auto server = Serve(mc, o);
  auto journal = client::DummyJournal::Create();
  REQUIRE(journal.ok());
  (*journal)->set_owner({5, 6});
  const int sock = RawAttach(path);
  auto settings = Ask<proto::DummyOp::kDummyDirectPuts>(sock, {}, (*journal)->fd());
  REQUIRE_MESSAGE(settings.ok(), settings.status().ToString());
  CHECK(settings->master == "127.0.0.1:50051");
  CHECK(settings->auth_token == "t0ken");
  REQUIRE((*journal)->Begin({"half-1", "half-2"}));
  ::close(sock);  // as a killed process's socket is
  CHECK(Eventually([&] {
    std::lock_guard lock(mc.mu);
    return mc.revoked.size() == 2;
  }));
  std::lock_guard lock(mc.mu);
  CHECK(mc.revoked == std::vector<std::string>{"half-1", "half-2"});
  CHECK(mc.revoked_by == msg::ClientId{5, 6});
}

TEST_CASE("a dummy that ended its puts revokes nothing; without settings puts come through") {
  MapClient mc;
  const std::string path = SocketPath();
  DummyServerOptions o{path};
  o.direct_puts.master = "127.0.0.1:50051";
  auto server = Serve(mc, o);
  auto plain = Serve(mc, {path + "-plain"});
  auto journal = client::DummyJournal::Create();
  REQUIRE(journal.ok());
  const int refused = RawAttach(path + "-plain");
  CHECK(Ask<proto::DummyOp::kDummyDirectPuts>(refused, {}, (*journal)->fd()).status().code() ==
        ErrorCode::NOT_SUPPORTED);
  const int sock = RawAttach(path);
  CHECK(Ask<proto::DummyOp::kDummyDirectPuts>(sock, {}).status().code() ==
        ErrorCode::INVALID_PARAMS);  // no journal came with it
  REQUIRE(Ask<proto::DummyOp::kDummyDirectPuts>(sock, {}, (*journal)->fd()).ok());
  REQUIRE((*journal)->Begin({"done"}));
  (*journal)->End();
  ::close(sock);
  ::close(refused);
  CHECK(Eventually([&] { return server->attached() == 0 && plain->attached() == 0; }));
  std::lock_guard lock(mc.mu);
  CHECK(mc.revoked.empty());
}

TEST_CASE("a dummy that cannot reach the master itself puts through its client") {
  MapClient mc;
  const std::string path = SocketPath();
  DummyServerOptions o{path};
  o.direct_puts.master = "127.0.0.1:1";  // nothing listens on port 1
  o.direct_puts.rpc_timeout_us = 200'000;
  o.direct_puts.rpc_retries = 0;
  auto server = Serve(mc, o);
  auto d = Attach(path);
  std::vector<uint8_t> v(100, 'v');
  REQUIRE(d->Put("through", v, {}).ok());
  std::lock_guard lock(mc.mu);
  CHECK(mc.objects["through"] == v);
}

}  // namespace
}  // namespace mc::clientd

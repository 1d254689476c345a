#include <doctest/doctest.h>

#include "rpc/rpc_test_util.h"

TEST_CASE("a client calls every operation and gets typed replies and errors") {
  TestServer ts;
  MasterClient c(ts.Client());
  msg::ClientId me{7, 8};
  CHECK(c.Invoke<Opcode::kMountSegment>({me, {"seg", "h", "e", "", 100, 1}}).ok());
  CHECK(c.Invoke<Opcode::kMountSegment>({me, {}}).code() == ErrorCode::INVALID_PARAMS);
  CHECK(c.Invoke<Opcode::kUnmountSegment>({me, "seg"}).code() == ErrorCode::NOT_SUPPORTED);
  CHECK(c.Invoke<Opcode::kPing>({me})->remount);
  auto put = c.Invoke<Opcode::kPutStart>({me, "a", 4096, {}});
  REQUIRE(put.ok());
  CHECK(put->replicas.at(0).buffers.at(0).size_bytes == 4096);
  auto again = c.Invoke<Opcode::kPutStart>({me, "a", 4096, {}});
  CHECK(again.code() == ErrorCode::OBJECT_ALREADY_EXISTS);
  CHECK(again.status().message() == "key 'a' exists");
  CHECK(c.Invoke<Opcode::kPutEnd>({me, "a"}).ok());
  CHECK(c.Invoke<Opcode::kPutRevoke>({me, "a"}).code() == ErrorCode::NOT_SUPPORTED);
  CHECK(c.Invoke<Opcode::kGetReplicaList>({me, "a"})->size_bytes == 4096);
  CHECK(c.Invoke<Opcode::kGetReplicaList>({me, "zz"}).code() == ErrorCode::OBJECT_NOT_FOUND);
  CHECK(*c.Invoke<Opcode::kExistKey>({me, "a"}));
  CHECK_FALSE(*c.Invoke<Opcode::kExistKey>({me, "b"}));
  CHECK(c.Invoke<Opcode::kListKeys>({"", 10, ""})->keys.size() == 1);
  CHECK(c.Invoke<Opcode::kClusterStatus>({})->segments.at(0).name == "seg");

  auto bp = c.Invoke<Opcode::kBatchPutStart>({{me, "b", 1, {}}, {me, "a", 1, {}}, {me, "c", 2, {}}});
  REQUIRE(bp.ok());
  REQUIRE(bp->size() == 3);
  CHECK((*bp)[0].status.ok());
  CHECK((*bp)[1].status.code() == ErrorCode::OBJECT_ALREADY_EXISTS);
  CHECK((*bp)[2].value.replicas.at(0).buffers.at(0).size_bytes == 2);
  CHECK(c.Invoke<Opcode::kBatchPutEnd>({{me, "b"}, {me, "c"}})->size() == 2);
  CHECK(c.Invoke<Opcode::kBatchPutRevoke>({{me, "b"}})->at(0).code() == ErrorCode::NOT_SUPPORTED);
  auto bg = c.Invoke<Opcode::kBatchGetReplicaList>({{me, "b"}, {me, "nope"}});
  CHECK(bg->at(0).value.size_bytes == 1);
  CHECK(bg->at(1).status.code() == ErrorCode::OBJECT_NOT_FOUND);
  auto be = c.Invoke<Opcode::kBatchExistKey>({{me, "b"}, {me, "nope"}});
  CHECK(be->at(0).value);
  CHECK_FALSE(be->at(1).value);
  auto br = c.Invoke<Opcode::kBatchRemove>({{"b", false}, {"nope", false}});
  CHECK(br->at(0).ok());
  CHECK(br->at(1).code() == ErrorCode::OBJECT_NOT_FOUND);
  CHECK(c.Invoke<Opcode::kRemove>({"a", true}).ok());
  CHECK(c.Invoke<Opcode::kRemoveAll>({})->removed == 1);  // "c"
  CHECK(ts.server->stats().requests == 22);
}

TEST_CASE("a notification (ReleaseLeases) gets no reply, even when it fails, and the connection serves on") {
  TestServer ts;
  Raw raw(ts.address());
  raw.Handshake();
  std::string release, exist;
  EncodePayload(msg::Batch<msg::KeyRequest>{{{1, 2}, "a"}, {{1, 2}, "b"}}, &release);
  EncodePayload(msg::KeyRequest{{1, 2}, "k"}, &exist);
  raw.SendFrame(Opcode::kReleaseLeases, 5, release);
  raw.SendFrame(Opcode::kExistKey, 6, exist);
  auto f = raw.Read();  // the first frame back answers the request after it
  REQUIRE(f.ok());
  CHECK(f->first.request_id == 6);
  CHECK(ts.handler.released == 2);
  // MasterClient returns once it is sent; its pooled connection stays usable.
  MasterClient c(ts.Client());
  for (int i = 0; i < 3; ++i) {
    CHECK(c.Invoke<Opcode::kReleaseLeases>({{{1, 2}, "x"}}).ok());
    CHECK(c.Invoke<Opcode::kExistKey>({{1, 2}, "x"}).ok());
  }
  CHECK(WaitUntil([&] { return ts.handler.released == 5; }));
  CHECK(ts.server->stats().accepted == 2);  // the raw peer and one pooled connection
}

TEST_CASE("a deferred ReleaseLeases goes in front of the next call, alone when none comes, or at close") {
  TestServer ts;
  // One connection: whether the release rides with the call or the flusher
  // sent it first, it is ahead of the call on that connection, and the
  // master handles a connection's frames in order.
  ClientOptions o = ts.Client();
  o.max_connections = 1;
  {
    MasterClient c(o);
    REQUIRE(c.Invoke<Opcode::kExistKey>({{1, 2}, "x"}).ok());
    c.ReleaseLeasesSoon({{{1, 2}, "a"}, {{1, 2}, "b"}});
    REQUIRE(c.Invoke<Opcode::kExistKey>({{1, 2}, "x"}).ok());
    CHECK(ts.handler.released == 2);  // handled before the call it preceded
    c.ReleaseLeasesSoon({{{1, 2}, "c"}});
    // No call follows: the flusher sends it on the idle connection.
    CHECK(WaitUntil([&] { return ts.handler.released == 3; }));
    c.ReleaseLeasesSoon({{{1, 2}, "d"}});
  }  // destroyed at once: what is still queued goes out on close
  CHECK(WaitUntil([&] { return ts.handler.released == 4; }));
  CHECK(ts.server->stats().accepted == 1);
}

TEST_CASE("requests pipeline on one connection and replies come back in order") {
  TestServer ts;
  Raw raw(ts.address());
  raw.Handshake();
  std::string many;
  for (uint64_t id = 100; id < 400; ++id) {
    std::string p;
    EncodePayload(msg::KeyRequest{{}, "k" + std::to_string(id)}, &p);
    std::string h(kFrameHeaderBytes, '\0');
    EncodeFrameHeader({kProtocolVersion, 0, Opcode::kExistKey, static_cast<uint32_t>(p.size()), id},
                      reinterpret_cast<uint8_t*>(h.data()));
    many += h + p;
  }
  raw.Send(many);  // one write, 300 requests
  for (uint64_t id = 100; id < 400; ++id) {
    auto f = raw.Read();
    REQUIRE(f.ok());
    CHECK(f->first.request_id == id);
    CHECK(f->first.is_reply());
  }
}

TEST_CASE("a master that is down gives RPC_FAIL naming its address, quickly") {
  uint16_t port;
  {
    TestServer ts;
    port = ts.server->port();
  }
  ClientOptions o;
  o.master = "127.0.0.1:" + std::to_string(port);
  o.retries = 3;
  o.initial_backoff_us = 1000;
  auto r = MasterClient(o).Invoke<Opcode::kPing>({});
  CHECK(r.code() == ErrorCode::RPC_FAIL);
  CHECK(Contains(r.status().message(), "master unavailable at 127.0.0.1:" + std::to_string(port)));
  CHECK(Contains(r.status().message(), "3 attempts"));
}

TEST_CASE("a client reconnects after the master restarts, and many threads share it") {
  auto ts = std::make_unique<TestServer>();
  uint16_t port = ts->server->port();
  ClientOptions o = ts->Client();
  MasterClient c(o);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) ok += c.Invoke<Opcode::kPing>({}).ok() ? 1 : 0;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(ok == 800);

  ts->server->Stop();
  CHECK(c.Invoke<Opcode::kPing>({}).code() == ErrorCode::RPC_FAIL);
  ServerOptions so;
  so.address = "127.0.0.1";
  so.port = port;
  TestHandler h;
  Server again(so, &h);
  REQUIRE(again.Start().ok());
  CHECK(c.Invoke<Opcode::kPing>({}).ok());
}

TEST_CASE("connections are dealt out to the I/O threads in turn, not all to the one that woke") {
  TestServer ts;  // two I/O threads
  // Eight clients, one connection each. Left to epoll, each connect wakes
  // whichever loop waits first, usually the same one every time.
  std::vector<std::unique_ptr<MasterClient>> clients;
  for (int i = 0; i < 8; ++i) clients.push_back(std::make_unique<MasterClient>(ts.Client()));
  for (auto& c : clients) REQUIRE(c->Invoke<Opcode::kPing>({}).ok());
  std::vector<int> per_thread;
  for (auto& [id, n] : ts.handler.ping_threads) per_thread.push_back(n);
  CHECK(per_thread == std::vector<int>{4, 4});
}

namespace {

// A gate the test opens by hand: every round waits for a new ticket.
class ManualGate : public ReplyGate {
 public:
  uint64_t Ticket(uint64_t requests) override {
    if (requests == 0) return 0;  // handshakes pass
    requests_ += requests;
    return ++issued_;
  }
  uint64_t Released() const override { return released_; }
  bool Failed() const override { return failed_; }
  void Subscribe(std::function<void()> wake) override {
    std::lock_guard<std::mutex> l(mu_);
    wakes_.push_back(std::move(wake));
  }
  void Unsubscribe() override {
    std::lock_guard<std::mutex> l(mu_);
    wakes_.clear();
  }
  void Release(bool fail = false) {
    released_ = issued_.load();
    failed_ = fail;
    std::lock_guard<std::mutex> l(mu_);
    for (auto& w : wakes_) w();
  }
  std::atomic<uint64_t> issued_{0}, released_{0}, requests_{0};
  std::atomic<bool> failed_{false};

 private:
  std::mutex mu_;
  std::vector<std::function<void()>> wakes_;
};

}  // namespace

TEST_CASE("a reply gate holds replies while the loop keeps serving, then releases them") {
  ManualGate gate;
  TestServer ts("", nullptr, &gate);
  MasterClient a(ts.Client()), b(ts.Client());
  std::atomic<int> a_done{0}, b_done{0};  // 1: ok, 2: failed
  std::thread ta([&] { a_done = a.Invoke<Opcode::kPutEnd>({{1, 2}, "k"}).ok() ? 1 : 2; });
  REQUIRE(WaitUntil([&] { return gate.requests_ >= 1; }));
  CHECK(a_done == 0);  // handled, but its reply waits for the gate
  // Another connection is still served while the first reply is held.
  std::thread tb([&] { b_done = b.Invoke<Opcode::kExistKey>({{1, 2}, "k"}).ok() ? 1 : 2; });
  REQUIRE(WaitUntil([&] { return gate.requests_ >= 2; }));
  CHECK(a_done == 0);
  CHECK(b_done == 0);
  gate.Release();
  ta.join();
  tb.join();
  CHECK(a_done == 1);
  CHECK(b_done == 1);
  // A failed gate closes the waiting connection: the caller sees RPC_FAIL.
  Status st;
  std::thread tc([&] { st = a.Invoke<Opcode::kPutEnd>({{1, 2}, "k"}).status(); });
  REQUIRE(WaitUntil([&] { return gate.requests_ >= 3; }));
  gate.Release(/*fail=*/true);
  tc.join();
  CHECK(st.code() == ErrorCode::RPC_FAIL);
}

namespace {

// Marks the requests a gate may let through at once (as the master's
// TakePrivateOps does): here Ping and ExistKey. A Ping from client hi=99
// blocks its I/O thread until `unblock`.
thread_local uint64_t t_free_ops = 0;
class BlockingHandler : public TestHandler {
 public:
  Result<msg::PingReply> Ping(const msg::PingRequest& r) override {
    ++t_free_ops;
    if (r.client.hi == 99) {
      entered = true;
      while (!unblock) std::this_thread::yield();
    }
    return TestHandler::Ping(r);
  }
  Result<bool> ExistKey(const msg::KeyRequest& r) override {
    ++t_free_ops;
    return TestHandler::ExistKey(r);
  }
  std::atomic<bool> entered{false}, unblock{false};
};

// Holds a round unless every request in it was marked free.
class SelectiveGate : public ManualGate {
 public:
  uint64_t Ticket(uint64_t requests) override {
    const uint64_t free_ops = std::exchange(t_free_ops, 0);
    calls.push_back(requests);
    if (requests == 0 || free_ops == requests) return 0;
    return ManualGate::Ticket(requests);
  }
  std::vector<uint64_t> calls;  // the I/O thread's only
};

}  // namespace

TEST_CASE("a connection's replies wait for its own requests, not for another's in the same wakeup") {
  BlockingHandler handler;
  SelectiveGate gate;
  ServerOptions o;
  o.reply_gate = &gate;
  o.address = "127.0.0.1";
  o.port = 0;
  o.io_threads = 1;
  Server server(o, &handler);
  REQUIRE(server.Start().ok());
  const std::string addr = "127.0.0.1:" + std::to_string(server.port());
  Raw blocker(addr), a(addr), b(addr);
  blocker.Handshake();
  a.Handshake();
  b.Handshake();
  // The only I/O thread is stuck in a handler while A (a gated PutEnd) and
  // B (a free ExistKey) both arrive, so one epoll wakeup sees both.
  std::string ping, key;
  EncodePayload(msg::PingRequest{{99, 1}}, &ping);
  EncodePayload(msg::KeyRequest{{1, 2}, "k"}, &key);
  blocker.SendFrame(Opcode::kPing, 1, ping);
  REQUIRE(WaitUntil([&] { return handler.entered.load(); }));
  a.SendFrame(Opcode::kPutEnd, 2, key);
  b.SendFrame(Opcode::kExistKey, 3, key);
  // Both frames delivered: loopback empties a sender's queue once the
  // receiver's socket holds the bytes.
  REQUIRE(WaitUntil([&] { return Unsent(a.fd) == 0 && Unsent(b.fd) == 0; }));
  handler.unblock = true;
  REQUIRE(blocker.Read().ok());
  auto rb = b.Read(3000);  // not held behind A's PutEnd
  REQUIRE(rb.ok());
  CHECK(rb->first.request_id == 3);
  CHECK(gate.requests_ == 1);  // only A's round was held
  gate.Release();
  auto ra = a.Read(3000);
  REQUIRE(ra.ok());
  CHECK(ra->first.request_id == 2);
  server.Stop();
}

// A handler that leaves an operation out does not compile: Handler is pure.
static_assert(std::is_abstract_v<Handler>);
static_assert(!std::is_abstract_v<testing::RefusingHandler>);

TEST_CASE("Dispatch hands every operation of the table to its own Handler method") {
  testing::RefusingHandler h;
  size_t ops = 0;
#define MC_TEST_DISPATCH(name, value, Req, Rep, kind)                                 \
  {                                                                                    \
    std::string payload, out;                                                          \
    EncodePayload(RequestOf<Opcode::k##name>{}, &payload);                             \
    Dispatch(h, Opcode::k##name, payload, &out);                                       \
    Status st = ReplyStatus(out);                                                      \
    CHECK(st.code() == ErrorCode::NOT_SUPPORTED);                                      \
    CHECK(st.message() == #name " is not supported by this server");                   \
    ++ops;                                                                             \
  }
  MC_MASTER_OPS(MC_TEST_DISPATCH)
#undef MC_TEST_DISPATCH
  size_t known = 0;  // every opcode but ConnectionError, Hello and Auth is an operation
  for (uint32_t v = 0; v <= 0xffff; ++v) known += IsKnownOpcode(static_cast<uint16_t>(v)) ? 1 : 0;
  CHECK(ops == known - 3);
}

TEST_CASE("a call the old leader dropped unanswered is sent again to the new one, within the budget") {
  ManualGate old_gate;
  TestServer old_leader("", nullptr, &old_gate);
  TestServer new_leader;
  ClientOptions o = old_leader.Client();
  // What etcd would say: the old leader until it is gone, then the new one.
  o.locate = [&](bool) -> Result<std::string> {
    return old_gate.failed_ ? new_leader.address() : old_leader.address();
  };
  MasterClient client(o);
  Status put_end, mount;
  std::thread t([&] { put_end = client.Invoke<Opcode::kPutEnd>({{1, 2}, "k"}).status(); });
  REQUIRE(WaitUntil([&] { return old_gate.requests_ >= 1; }));
  old_gate.Release(/*fail=*/true);  // the old leader loses its lease: the reply never leaves
  t.join();
  CHECK(put_end.ok());
  // A mount is not sent twice: the store mounts again by itself.
  ManualGate gate2;
  TestServer dying("", nullptr, &gate2);
  ClientOptions o2 = dying.Client();
  o2.locate = [&](bool) -> Result<std::string> {
    return gate2.failed_ ? new_leader.address() : dying.address();
  };
  MasterClient client2(o2);
  std::thread t2([&] { mount = client2.Invoke<Opcode::kMountSegment>({}).status(); });
  REQUIRE(WaitUntil([&] { return gate2.requests_ >= 1; }));
  gate2.Release(/*fail=*/true);
  t2.join();
  CHECK(mount.code() == ErrorCode::RPC_FAIL);
}

TEST_CASE("without a locator a dropped call is not sent again") {
  ManualGate gate;
  TestServer ts("", nullptr, &gate);
  MasterClient client(ts.Client());
  Status st;
  std::thread t([&] { st = client.Invoke<Opcode::kPutEnd>({{1, 2}, "k"}).status(); });
  REQUIRE(WaitUntil([&] { return gate.requests_ >= 1; }));
  gate.Release(/*fail=*/true);
  t.join();
  CHECK(st.code() == ErrorCode::RPC_FAIL);
  CHECK(gate.requests_ == 1);
}

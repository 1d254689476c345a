// RespClient against a scripted server on loopback: pipelined SET/GET/EXISTS
// send the RESP2 commands and read the replies, nil is a miss, a server
// error is returned. Redis URLs parse or are refused with the reason.
#include <doctest/doctest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "bench/resp.h"
#include "net/socket.h"

using namespace mc::bench;

namespace {

// Accepts one connection, reads until `expect` bytes arrived, answers `reply`.
struct ScriptedServer {
  int listen_fd;
  uint16_t port;
  std::string received;
  std::thread thread;

  ScriptedServer(size_t expect, std::string reply) {
    listen_fd = *mc::net::ListenTcp("127.0.0.1", 0, 4);
    port = mc::net::LocalPort(listen_fd);
    mc::net::SetNonBlocking(listen_fd, false);
    thread = std::thread([this, expect, reply] {
      int fd = ::accept(listen_fd, nullptr, nullptr);
      char buf[4096];
      while (received.size() < expect) {
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        received.append(buf, static_cast<size_t>(n));
      }
      ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
      ::close(fd);
    });
  }
  ~ScriptedServer() {
    thread.join();
    ::close(listen_fd);
  }
  std::string addr() const { return "127.0.0.1:" + std::to_string(port); }
};

}  // namespace

TEST_CASE("redis urls parse to host:port, others are refused") {
  CHECK(*ParseRedisUrl("redis://127.0.0.1:6380") == "127.0.0.1:6380");
  CHECK(*ParseRedisUrl("redis://localhost") == "localhost:6379");
  CHECK_FALSE(ParseRedisUrl("http://127.0.0.1:6379").ok());
  CHECK_FALSE(ParseRedisUrl("redis://").ok());
  CHECK_FALSE(ParseRedisUrl("redis://h:1/db").ok());
}

TEST_CASE("pipelined SET sends every command and reads every +OK") {
  std::string expect = "*3\r\n$3\r\nSET\r\n$1\r\na\r\n$3\r\nxyz\r\n*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$3\r\nxyz\r\n";
  ScriptedServer server(expect.size(), "+OK\r\n+OK\r\n");
  auto c = RespClient::Connect(server.addr(), 2000000);
  REQUIRE(c.ok());
  std::vector<std::string> keys = {"a", "b"};
  std::string v = "xyz";
  CHECK((*c)->Set(keys, std::span(reinterpret_cast<const uint8_t*>(v.data()), v.size())).ok());
  c->reset();
  server.thread.join();
  server.thread = std::thread([] {});
  CHECK(server.received == expect);
}

TEST_CASE("pipelined GET returns sizes, -1 for nil; an error reply is an error") {
  ScriptedServer server(1, "$5\r\nhello\r\n$-1\r\n$0\r\n\r\n");
  auto c = RespClient::Connect(server.addr(), 2000000);
  REQUIRE(c.ok());
  std::vector<std::string> keys = {"a", "b", "c"};
  std::vector<uint8_t> buf;
  auto sizes = (*c)->Get(keys, &buf);
  REQUIRE(sizes.ok());
  CHECK(*sizes == std::vector<int64_t>{5, -1, 0});

  ScriptedServer bad(1, "-ERR wrong\r\n");
  auto c2 = RespClient::Connect(bad.addr(), 2000000);
  REQUIRE(c2.ok());
  auto r = (*c2)->Get(std::vector<std::string>{"x"}, &buf);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("ERR wrong") != std::string::npos);
}

TEST_CASE("EXISTS maps integer replies to presence") {
  ScriptedServer server(1, ":1\r\n:0\r\n");
  auto c = RespClient::Connect(server.addr(), 2000000);
  REQUIRE(c.ok());
  auto r = (*c)->Exists(std::vector<std::string>{"a", "b"});
  REQUIRE(r.ok());
  CHECK(*r == std::vector<bool>{true, false});
}

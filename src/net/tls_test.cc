#include "net/tls.h"

#include <doctest/doctest.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <thread>

#include "net/socket.h"
#include "net/stream_io.h"
#include "net/tls_testing.h"

namespace mc::net {
namespace {

using testing::TestPki;

constexpr uint64_t kDeadlineUs = 10000000;

// A loopback listener whose one accepted connection is handed to `serve`
// on a thread; Join() waits for it.
struct Loopback {
  int listen_fd = -1;
  uint16_t port = 0;
  std::thread thread;
  explicit Loopback(std::function<void(int fd)> serve) {
    auto l = ListenTcp("127.0.0.1", 0, 4);
    REQUIRE(l.ok());
    listen_fd = *l;
    SetNonBlocking(listen_fd, false);
    port = LocalPort(listen_fd);
    thread = std::thread([this, serve] {
      int fd = ::accept(listen_fd, nullptr, nullptr);
      serve(fd);
      ::close(fd);
    });
  }
  int Connect() {
    auto fd = ConnectTcp({"127.0.0.1", port}, kDeadlineUs);
    REQUIRE(fd.ok());
    return *fd;
  }
  void Join() {
    if (thread.joinable()) thread.join();
  }
  ~Loopback() {
    Join();
    ::close(listen_fd);
  }
};

std::shared_ptr<TlsContext> Ctx(const TlsSettings& s, TlsRole role) {
  auto c = TlsContext::Create(s, role);
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  return *c;
}

TlsSettings ServerSettings(const TestPki& p) { return {p.cert, p.key, p.ca, false, "1.3"}; }
TlsSettings ClientSettings(const TestPki& p) { return {"", "", p.ca, false, "1.3"}; }

// Server side of an echo of one 4-byte message; `outcome` gets its status.
std::function<void(int)> EchoServer(std::shared_ptr<TlsContext> ctx, Status* outcome) {
  return [ctx, outcome](int fd) {
    auto ssl = TlsHandshake(*ctx, fd, "", MonotonicUs() + kDeadlineUs);
    if (!ssl.ok()) {
      *outcome = ssl.status();
      return;
    }
    char buf[4];
    Stream s(fd, ssl->get());
    *outcome = RecvAll(s, buf, sizeof buf);
    if (outcome->ok()) *outcome = SendAll(s, buf, sizeof buf);
  };
}

TEST_CASE("a TLS 1.3 client and server shake hands over loopback and move bytes both ways") {
  TestPki pki = testing::MakeTestPki();
  Status server_status;
  Loopback lb(EchoServer(Ctx(ServerSettings(pki), TlsRole::kServer), &server_status));
  auto client = Ctx(ClientSettings(pki), TlsRole::kClient);
  int fd = lb.Connect();
  auto ssl = TlsHandshake(*client, fd, "127.0.0.1", MonotonicUs() + kDeadlineUs);
  REQUIRE_MESSAGE(ssl.ok(), ssl.status().message());
  CHECK(TlsDescribe(ssl->get()).starts_with("TLSv1.3"));
  Stream s(fd, ssl->get());
  REQUIRE(SendAll(s, "ping", 4).ok());
  char buf[4];
  REQUIRE(RecvAll(s, buf, 4).ok());
  CHECK(std::string(buf, 4) == "ping");
  lb.Join();
  CHECK_MESSAGE(server_status.ok(), server_status.message());
  ssl->reset();
  ::close(fd);
  testing::RemoveTestPki(pki);
}

TEST_CASE("a TLS server refuses a plaintext peer and says the peer does not speak TLS") {
  TestPki pki = testing::MakeTestPki();
  Status server_status;
  Loopback lb(EchoServer(Ctx(ServerSettings(pki), TlsRole::kServer), &server_status));
  int fd = lb.Connect();
  const std::string plain = "MCRP\x01 a plaintext hello that is no TLS record at all";
  REQUIRE(SendAll(fd, plain.data(), plain.size()).ok());
  lb.Join();
  CHECK(server_status.code() == ErrorCode::PROTOCOL_ERROR);
  CHECK_MESSAGE(server_status.message().find("does not speak TLS") != std::string::npos,
                server_status.message());
  ::close(fd);
  testing::RemoveTestPki(pki);
}

TEST_CASE("a TLS client of a plaintext server fails saying the peer does not speak TLS") {
  TestPki pki = testing::MakeTestPki();
  Loopback lb([](int fd) {
    const std::string hello = "MCRP\x01 plaintext server hello, far from a TLS record";
    (void)SendAll(fd, hello.data(), hello.size());
    char buf[512];
    (void)::recv(fd, buf, sizeof buf, 0);
  });
  auto client = Ctx(ClientSettings(pki), TlsRole::kClient);
  int fd = lb.Connect();
  auto ssl = TlsHandshake(*client, fd, "127.0.0.1", MonotonicUs() + kDeadlineUs);
  REQUIRE_FALSE(ssl.ok());
  CHECK(ssl.code() == ErrorCode::PROTOCOL_ERROR);
  CHECK_MESSAGE(ssl.status().message().find("does not speak TLS") != std::string::npos,
                ssl.status().message());
  ::close(fd);
  lb.Join();
  testing::RemoveTestPki(pki);
}

TEST_CASE("a client offering only TLS 1.2 is refused by default and accepted with min_version 1.2") {
  TestPki pki = testing::MakeTestPki();
  for (const char* min : {"1.3", "1.2"}) {
    CAPTURE(min);
    TlsSettings ss = ServerSettings(pki);
    ss.min_version = min;
    Status server_status;
    Loopback lb(EchoServer(Ctx(ss, TlsRole::kServer), &server_status));
    SSL_CTX* old_client = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_max_proto_version(old_client, TLS1_2_VERSION);
    SSL* ssl = SSL_new(old_client);
    int fd = lb.Connect();
    SSL_set_fd(ssl, fd);
    const bool connected = SSL_connect(ssl) == 1;
    if (connected) {
      SSL_write(ssl, "ping", 4);
      char buf[4];
      SSL_read(ssl, buf, 4);
    }
    lb.Join();
    if (std::string(min) == "1.3") {
      CHECK_FALSE(connected);
      CHECK_MESSAGE(server_status.message().find("no TLS version this node accepts") !=
                        std::string::npos,
                    server_status.message());
    } else {
      CHECK(connected);
      CHECK_MESSAGE(server_status.ok(), server_status.message());
    }
    SSL_free(ssl);
    SSL_CTX_free(old_client);
    ::close(fd);
  }
  testing::RemoveTestPki(pki);
}

TEST_CASE("missing, expired and mismatched certificates or keys are refused naming the file") {
  TestPki pki = testing::MakeTestPki();
  auto fails = [](TlsSettings s, const std::string& needle) {
    auto c = TlsContext::Create(s, TlsRole::kServer);
    REQUIRE_FALSE(c.ok());
    CHECK(c.code() == ErrorCode::INVALID_PARAMS);
    CHECK_MESSAGE(c.status().message().find(needle) != std::string::npos, c.status().message());
  };
  TlsSettings s = ServerSettings(pki);
  s.cert = pki.dir + "/absent.pem";
  fails(s, "cannot read TLS certificate '" + s.cert + "': No such file");
  s = ServerSettings(pki);
  s.key = pki.dir + "/absent.key";
  fails(s, "cannot read TLS key '" + s.key + "'");
  s = ServerSettings(pki);
  s.cert = pki.expired_cert;
  s.key = pki.expired_key;
  fails(s, "TLS certificate '" + pki.expired_cert + "' expired on");
  s = ServerSettings(pki);
  s.key = pki.other_key;
  fails(s, "TLS key '" + pki.other_key + "' does not match certificate '" + pki.cert + "'");
  s = ServerSettings(pki);
  s.ca = "";
  s.verify_peer = true;
  fails(s, "verify_peer needs [tls] ca");
  s = ServerSettings(pki);
  s.cert = pki.key;  // a key where the certificate should be
  fails(s, "holds no PEM certificate");
  testing::RemoveTestPki(pki);
}

// The serial number of the certificate the server showed on `ssl`.
long PeerSerial(SSL* ssl) {
  X509* x = SSL_get1_peer_certificate(ssl);
  long serial = x ? ASN1_INTEGER_get(X509_get0_serialNumber(x)) : -1;
  X509_free(x);
  return serial;
}

TEST_CASE("a reload serves the new certificate to new connections while an open one keeps working") {
  TestPki pki = testing::MakeTestPki();
  auto server = Ctx(ServerSettings(pki), TlsRole::kServer);
  auto client = Ctx(ClientSettings(pki), TlsRole::kClient);
  // The first connection echoes twice: before and after the reload.
  Status first_status;
  Loopback first([&](int fd) {
    auto ssl = TlsHandshake(*server, fd, "", MonotonicUs() + kDeadlineUs);
    if (!ssl.ok()) {
      first_status = ssl.status();
      return;
    }
    Stream s(fd, ssl->get());
    char buf[4];
    for (int i = 0; i < 2 && first_status.ok(); ++i) {
      first_status = RecvAll(s, buf, 4);
      if (first_status.ok()) first_status = SendAll(s, buf, 4);
    }
  });
  int fd1 = first.Connect();
  auto ssl1 = TlsHandshake(*client, fd1, "127.0.0.1", MonotonicUs() + kDeadlineUs);
  REQUIRE(ssl1.ok());
  CHECK(PeerSerial(ssl1->get()) == 2);
  Stream s1(fd1, ssl1->get());
  char buf[4];
  REQUIRE(SendAll(s1, "one!", 4).ok());
  REQUIRE(RecvAll(s1, buf, 4).ok());

  testing::WriteLeaf(pki, pki.cert, pki.key, "server renewed", 42);
  REQUIRE(server->Reload().ok());
  CHECK(server->reloads() == 1);

  REQUIRE(SendAll(s1, "two!", 4).ok());  // the open connection lives on
  REQUIRE(RecvAll(s1, buf, 4).ok());
  CHECK(std::string(buf, 4) == "two!");
  first.Join();
  CHECK_MESSAGE(first_status.ok(), first_status.message());

  Status second_status;
  Loopback second(EchoServer(server, &second_status));
  int fd2 = second.Connect();
  auto ssl2 = TlsHandshake(*client, fd2, "127.0.0.1", MonotonicUs() + kDeadlineUs);
  REQUIRE(ssl2.ok());
  CHECK(PeerSerial(ssl2->get()) == 42);
  Stream s2(fd2, ssl2->get());
  REQUIRE(SendAll(s2, "new!", 4).ok());
  REQUIRE(RecvAll(s2, buf, 4).ok());
  second.Join();

  // A reload that fails keeps the certificate that works.
  ::unlink(pki.key.c_str());
  Status bad = server->Reload();
  CHECK_FALSE(bad.ok());
  CHECK(bad.message().find(pki.key) != std::string::npos);
  CHECK(server->reloads() == 1);
  ssl1->reset();
  ssl2->reset();
  ::close(fd1);
  ::close(fd2);
  testing::RemoveTestPki(pki);
}

TEST_CASE("mutual TLS refuses a client without a certificate and accepts one with") {
  TestPki pki = testing::MakeTestPki();
  TlsSettings ss = ServerSettings(pki);
  ss.verify_peer = true;
  auto server = Ctx(ss, TlsRole::kServer);
  {
    Status server_status;
    Loopback lb(EchoServer(server, &server_status));
    auto anonymous = Ctx(ClientSettings(pki), TlsRole::kClient);
    int fd = lb.Connect();
    auto ssl = TlsHandshake(*anonymous, fd, "127.0.0.1", MonotonicUs() + kDeadlineUs);
    // TLS 1.3: the client learns of the refusal on its first read.
    Status st = ssl.status();
    if (ssl.ok()) {
      Stream s(fd, ssl->get());
      char buf[4];
      (void)SendAll(s, "ping", 4);
      st = RecvAll(s, buf, 4);
      ssl->reset();
    }
    lb.Join();
    CHECK_FALSE(st.ok());
    CHECK_MESSAGE(st.message().find("requires a client certificate") != std::string::npos,
                  st.message());
    CHECK_MESSAGE(server_status.message().find("certificate") != std::string::npos,
                  server_status.message());
    ::close(fd);
  }
  {
    Status server_status;
    Loopback lb(EchoServer(server, &server_status));
    auto with_cert = Ctx({pki.client_cert, pki.client_key, pki.ca, false, "1.3"}, TlsRole::kClient);
    int fd = lb.Connect();
    auto ssl = TlsHandshake(*with_cert, fd, "127.0.0.1", MonotonicUs() + kDeadlineUs);
    REQUIRE_MESSAGE(ssl.ok(), ssl.status().message());
    Stream s(fd, ssl->get());
    char buf[4];
    REQUIRE(SendAll(s, "ping", 4).ok());
    CHECK(RecvAll(s, buf, 4).ok());
    lb.Join();
    CHECK_MESSAGE(server_status.ok(), server_status.message());
    ssl->reset();
    ::close(fd);
  }
  testing::RemoveTestPki(pki);
}

TEST_CASE("a client refuses a server whose certificate another CA signed or names another host") {
  TestPki pki = testing::MakeTestPki();
  for (int variant = 0; variant < 2; ++variant) {
    CAPTURE(variant);
    Status server_status;
    Loopback lb(EchoServer(Ctx(ServerSettings(pki), TlsRole::kServer), &server_status));
    TlsSettings cs = ClientSettings(pki);
    std::string host = "127.0.0.1";
    if (variant == 0) cs.ca = pki.other_ca;
    if (variant == 1) host = "10.9.9.9";  // only the name checked; we dial loopback
    auto client = Ctx(cs, TlsRole::kClient);
    int fd = lb.Connect();
    auto ssl = TlsHandshake(*client, fd, host, MonotonicUs() + kDeadlineUs);
    REQUIRE_FALSE(ssl.ok());
    CHECK(ssl.code() == ErrorCode::PROTOCOL_ERROR);
    CHECK_MESSAGE(ssl.status().message().find("certificate did not verify") != std::string::npos,
                  ssl.status().message());
    ::close(fd);
    lb.Join();
  }
  testing::RemoveTestPki(pki);
}

}  // namespace
}  // namespace mc::net

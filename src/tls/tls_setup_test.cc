#include "tls/tls_setup.h"

#include <doctest/doctest.h>

#include "net/tls_testing.h"

using namespace mc;
using mc::net::testing::MakeTestPki;
using mc::net::testing::RemoveTestPki;
using mc::net::testing::TestPki;

namespace {

TlsConfig WithCert(const TestPki& pki) {
  TlsConfig t;
  t.cert = pki.cert;
  t.key = pki.key;
  t.ca = pki.ca;
  return t;
}

}  // namespace

TEST_CASE("without a cert a server is plain TCP, and without cert or ca a client too") {
  TlsConfig none;
  auto server = ServerTls(none, {.listeners = "every port"});
  REQUIRE(server.ok());
  CHECK(*server == nullptr);
  auto client = ClientTls(none);
  REQUIRE(client.ok());
  CHECK(*client == nullptr);
  CHECK(!HttpServerTls(nullptr));

  TestPki pki = MakeTestPki();
  TlsConfig ca_only;
  ca_only.ca = pki.ca;
  auto plain_server = ServerTls(ca_only, {.without_cert = "a CA without a cert"});
  REQUIRE(plain_server.ok());
  CHECK(*plain_server == nullptr);
  auto ca_client = ClientTls(ca_only);
  REQUIRE(ca_client.ok());
  REQUIRE(*ca_client != nullptr);
  CHECK((*ca_client)->role() == net::TlsRole::kClient);
  RemoveTestPki(pki);
}

TEST_CASE("a cert gives a server context with every [tls] setting, and an HTTP hook") {
  TestPki pki = MakeTestPki();
  TlsConfig t = WithCert(pki);
  t.verify_peer = true;
  t.min_version = "1.2";
  auto server = ServerTls(t, {.listeners = "the data port"});
  REQUIRE(server.ok());
  REQUIRE(*server != nullptr);
  CHECK((*server)->role() == net::TlsRole::kServer);
  const net::TlsSettings& s = (*server)->settings();
  CHECK(s.cert == pki.cert);
  CHECK(s.key == pki.key);
  CHECK(s.ca == pki.ca);
  CHECK(s.verify_peer);
  CHECK(s.min_version == "1.2");
  CHECK(static_cast<bool>(HttpServerTls(*server)));
  RemoveTestPki(pki);
}

TEST_CASE("a missing or expired certificate is refused naming the file") {
  TestPki pki = MakeTestPki();
  TlsConfig missing = WithCert(pki);
  missing.cert = pki.dir + "/absent.pem";
  auto server = ServerTls(missing, {.listeners = "every port"});
  REQUIRE(!server.ok());
  CHECK(server.status().message().find("absent.pem") != std::string::npos);
  auto client = ClientTls(missing);
  REQUIRE(!client.ok());
  CHECK(client.status().message().find("absent.pem") != std::string::npos);

  TlsConfig expired = WithCert(pki);
  expired.cert = pki.expired_cert;
  expired.key = pki.expired_key;
  auto old = ServerTls(expired, {});
  REQUIRE(!old.ok());
  CHECK(old.status().message().find(pki.expired_cert) != std::string::npos);
  RemoveTestPki(pki);
}

TEST_CASE("a reload of a context whose files are gone fails and keeps the old certificate") {
  TestPki pki = MakeTestPki();
  auto server = ServerTls(WithCert(pki), {});
  REQUIRE(server.ok());
  REQUIRE(*server != nullptr);
  ReloadTls(server->get());
  CHECK((*server)->reloads() == 1);
  RemoveTestPki(pki);
  ReloadTls(server->get());  // logs the failure
  CHECK((*server)->reloads() == 1);
  CHECK((*server)->settings().cert == pki.cert);
  ReloadTls(nullptr);  // says there is nothing to reload
}

// Test-only: a throwaway PKI made with the OpenSSL API in a temp folder (a
// CA, a server and a client certificate for 127.0.0.1/localhost, an expired
// one, a key that matches nothing), for the TLS tests of net, rpc and
// transfer. Not thread-safe; call from the test's main thread.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace mc::net::testing {

struct TestPki {
  std::string dir;
  std::string ca;                       // CA certificate
  std::string cert, key;                // server (and client) certificate and key
  std::string client_cert, client_key;  // a second leaf, CN "client"
  std::string expired_cert, expired_key;
  std::string other_key;                // matches no certificate
  std::string other_ca;                 // a CA that signed nothing here
};

inline EVP_PKEY* NewKey() { return EVP_EC_gen("P-256"); }

inline void WriteKey(EVP_PKEY* k, const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  PEM_write_PrivateKey(f, k, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
}

inline void WriteCert(X509* x, const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  PEM_write_X509(f, x);
  std::fclose(f);
}

// A certificate for `key` named `cn`, signed by (ca, ca_key) or itself,
// valid from now + from_s to now + to_s.
inline X509* MakeCert(EVP_PKEY* key, const char* cn, X509* ca, EVP_PKEY* ca_key, long from_s,
                      long to_s, long serial) {
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
  X509_gmtime_adj(X509_getm_notBefore(x), from_s);
  X509_gmtime_adj(X509_getm_notAfter(x), to_s);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509_set_issuer_name(x, ca ? X509_get_subject_name(ca) : name);
  X509V3_CTX v3;
  X509V3_set_ctx_nodb(&v3);
  X509V3_set_ctx(&v3, ca ? ca : x, x, nullptr, nullptr, 0);
  const char* ext = ca ? "IP:127.0.0.1,DNS:localhost" : nullptr;
  if (ext) {
    X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, &v3, NID_subject_alt_name, ext);
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
  } else {
    X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, &v3, NID_basic_constraints, "critical,CA:TRUE");
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
  }
  X509_sign(x, ca_key ? ca_key : key, EVP_sha256());
  return x;
}

// Writes a leaf signed by the PKI's CA to cert_path/key_path (serial tells
// two apart, e.g. before and after a reload).
inline void WriteLeaf(const TestPki& pki, const std::string& cert_path, const std::string& key_path,
                      const char* cn, long serial) {
  FILE* f = std::fopen(pki.ca.c_str(), "r");
  X509* ca = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  f = std::fopen((pki.dir + "/ca.key").c_str(), "r");
  EVP_PKEY* ca_key = PEM_read_PrivateKey(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  EVP_PKEY* k = NewKey();
  X509* x = MakeCert(k, cn, ca, ca_key, -60, 86400, serial);
  // Through a temp file and rename, as an operator replacing files would.
  WriteKey(k, key_path + ".tmp");
  WriteCert(x, cert_path + ".tmp");
  std::rename((key_path + ".tmp").c_str(), key_path.c_str());
  std::rename((cert_path + ".tmp").c_str(), cert_path.c_str());
  X509_free(x);
  EVP_PKEY_free(k);
  X509_free(ca);
  EVP_PKEY_free(ca_key);
}

inline TestPki MakeTestPki() {
  TestPki p;
  char tmpl[] = "/tmp/mc_tls_test_XXXXXX";
  p.dir = ::mkdtemp(tmpl);
  EVP_PKEY* ca_key = NewKey();
  X509* ca = MakeCert(ca_key, "mooncake test CA", nullptr, nullptr, -60, 86400, 1);
  p.ca = p.dir + "/ca.pem";
  WriteCert(ca, p.ca);
  WriteKey(ca_key, p.dir + "/ca.key");
  p.cert = p.dir + "/server.pem";
  p.key = p.dir + "/server.key";
  WriteLeaf(p, p.cert, p.key, "server", 2);
  p.client_cert = p.dir + "/client.pem";
  p.client_key = p.dir + "/client.key";
  WriteLeaf(p, p.client_cert, p.client_key, "client", 3);
  EVP_PKEY* k = NewKey();
  X509* old = MakeCert(k, "expired", ca, ca_key, -7200, -3600, 4);
  p.expired_cert = p.dir + "/expired.pem";
  p.expired_key = p.dir + "/expired.key";
  WriteCert(old, p.expired_cert);
  WriteKey(k, p.expired_key);
  EVP_PKEY* other = NewKey();
  p.other_key = p.dir + "/other.key";
  WriteKey(other, p.other_key);
  X509* other_ca = MakeCert(other, "another CA", nullptr, nullptr, -60, 86400, 5);
  p.other_ca = p.dir + "/other_ca.pem";
  WriteCert(other_ca, p.other_ca);
  X509_free(other_ca);
  EVP_PKEY_free(other);
  X509_free(old);
  EVP_PKEY_free(k);
  X509_free(ca);
  EVP_PKEY_free(ca_key);
  return p;
}

inline void RemoveTestPki(const TestPki& p) {
  std::string cmd = "rm -rf '" + p.dir + "'";
  int rc = std::system(cmd.c_str());
  (void)rc;
}

}  // namespace mc::net::testing

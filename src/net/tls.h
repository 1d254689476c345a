// TLS for every listener and client (OpenSSL): a TlsContext holds the
// SSL_CTX built from plain TlsSettings (the config module parses `[tls]`),
// and the blocking helpers below run a handshake or move bytes over a
// connection that is either a plain fd or an SSL object (Stream).
//
// Reload: Reload() builds a whole new SSL_CTX from the files and swaps it in
// under a mutex; connections made before keep their SSL objects (each holds
// a reference to the SSL_CTX it was made from), so nothing is dropped. A
// failed reload keeps the old context and says why.
//
// TLS 1.3 only unless min_version is "1.2". Servers send no session tickets
// (so an SSL_read never has to write on a non-blocking server). Kernel TLS
// is asked for (SSL_OP_ENABLE_KTLS) where OpenSSL was built with it; it is
// used only if the kernel's `tls` module is there (KtlsText tells).
//
// Thread-safe: a TlsContext is shared by all threads; one SSL object (one
// connection) must be used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "common/result.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace mc::net {

struct TlsSettings {
  std::string cert;          // PEM certificate (chain); servers need it, clients send it for mTLS
  std::string key;           // PEM private key; empty: read it from `cert`
  std::string ca;            // PEM CA bundle: verifies the peer; empty: system CAs (clients)
  bool verify_peer = false;  // servers: require and verify a client certificate (mutual TLS)
  std::string min_version = "1.3";  // "1.3" or "1.2"
  // A server speaks TLS when it has a certificate; a client when it has a
  // certificate or a CA.
  bool server_enabled() const { return !cert.empty(); }
  bool client_enabled() const { return !cert.empty() || !ca.empty(); }
};

enum class TlsRole { kServer, kClient };

struct SslFree {
  void operator()(SSL* ssl) const;
};
using SslPtr = std::unique_ptr<SSL, SslFree>;

class TlsContext {
 public:
  // Loads and checks the files: INVALID_PARAMS naming the file for a
  // missing, unreadable, expired or not-yet-valid certificate, a key that
  // does not match it, a bad CA, or verify_peer without a CA.
  static Result<std::shared_ptr<TlsContext>> Create(const TlsSettings& settings, TlsRole role);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // Re-reads the files into a new SSL_CTX for connections made from now on.
  Status Reload();
  uint64_t reloads() const;

  // A new SSL object for an accepted (server) or connected (client) fd.
  SslPtr NewSsl(int fd) const;
  // The current SSL_CTX with a reference the caller must SSL_CTX_free.
  SSL_CTX* AcquireCtx() const;
  // Prepares an SSL_CTX made by someone else (cpp-httplib's SSLServer) like
  // ours, and makes each of its handshakes use our current certificate, so
  // Reload() reaches that server too. This context must outlive `ctx`.
  bool AdoptServerCtx(SSL_CTX* ctx) const;

  const TlsSettings& settings() const { return settings_; }
  TlsRole role() const { return role_; }

 private:
  TlsContext(TlsSettings settings, TlsRole role) : settings_(std::move(settings)), role_(role) {}

  const TlsSettings settings_;
  const TlsRole role_;
  mutable std::mutex mu_;
  SSL_CTX* ctx_ = nullptr;  // guarded by mu_
  uint64_t reloads_ = 0;    // guarded by mu_
};

// Checks a PEM certificate file: readable, parseable, valid now. The error
// names the file (used by Create and by tests).
Status CheckCertificateFile(const std::string& path, const char* what);

// Handshake on a connected fd (blocking or not; the fd's mode is restored),
// within `deadline_us` (net::MonotonicUs). Client: `host` is the name or
// address the certificate must carry (empty: not checked). Errors say what
// failed in words: a peer without TLS, a certificate that did not verify
// (and why), a missing client certificate; those are PROTOCOL_ERROR (a retry
// cannot help), a peer that went away RPC_FAIL, the deadline RPC_TIMEOUT.
// The session reads ahead (SSL_has_pending, not poll, tells of buffered
// input), so it is for connections read through OpenSSL only.
Result<SslPtr> TlsHandshake(const TlsContext& ctx, int fd, const std::string& host,
                            uint64_t deadline_us);

// What a failed SSL call on `ssl` (return value `ret`) means, drained from
// OpenSSL's error queue of this thread. `definite` (if given): true when a
// retry cannot help (no TLS on the peer, a certificate that does not verify).
std::string TlsErrorText(SSL* ssl, int ret, bool* definite = nullptr);

// Reads at least one byte / writes everything over `ssl`. deadline_us 0:
// the fd is blocking with socket timeouts, so a WANT_READ/WRITE is a
// timeout; otherwise the fd is non-blocking and polled until the deadline.
// A read returning 0 means the peer closed.
Result<size_t> TlsRead(SSL* ssl, int fd, char* buf, size_t cap, uint64_t deadline_us);
Status TlsWrite(SSL* ssl, int fd, const char* data, size_t len, uint64_t deadline_us);

// "TLSv1.3 TLS_AES_256_GCM_SHA384, kernel TLS send off, receive off".
std::string TlsDescribe(SSL* ssl);

// Whether OpenSSL was built with kernel TLS, and whether the kernel offers
// it (the `tls` ULP can be set on a TCP socket): one line for the bench.
std::string KtlsText();

// True if `byte` starts a TLS record (a ClientHello starts with 0x16), which
// a plain server uses to tell a TLS client from a confused one.
inline bool LooksLikeTls(const unsigned char* bytes, size_t n) {
  return n >= 1 && bytes[0] == 0x16 && (n < 2 || bytes[1] == 0x03);
}

}  // namespace mc::net

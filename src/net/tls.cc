#include "net/tls.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "net/socket.h"

namespace mc::net {

void SslFree::operator()(SSL* ssl) const { SSL_free(ssl); }

namespace {

Status Bad(std::string message) { return Error(ErrorCode::INVALID_PARAMS, std::move(message)); }

// Everything on this thread's OpenSSL error queue, oldest first.
std::string DrainErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

std::string Asn1TimeText(const ASN1_TIME* t) {
  BIO* bio = BIO_new(BIO_s_mem());
  ASN1_TIME_print(bio, t);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string text(data, static_cast<size_t>(n));
  BIO_free(bio);
  return text;
}

// A readable file, or an error naming it and the errno text.
Status CheckReadable(const std::string& path, const char* what) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) {
    return Bad(std::string("cannot read TLS ") + what + " '" + path + "': " + std::strerror(errno));
  }
  std::fclose(f);
  return Status::Ok();
}

int VersionOf(const std::string& v) { return v == "1.2" ? TLS1_2_VERSION : TLS1_3_VERSION; }

// Kernel TLS where OpenSSL has it; it falls back to user space by itself
// when the kernel lacks the `tls` module.
void AskForKtls(SSL_CTX* ctx) {
#ifdef SSL_OP_ENABLE_KTLS
  SSL_CTX_set_options(ctx, SSL_OP_ENABLE_KTLS);
#else
  (void)ctx;
#endif
}

// Marks an SSL object whose server asked for a client certificate.
int CertRequestedIndex() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// A client without a certificate was asked for one: our servers ask only
// with verify_peer, which then refuses the connection. TLS 1.3 tells the
// client only after its handshake (and a reset can hide the alert), so the
// client notes the request and fails the handshake itself, clearly.
int NoteCertificateRequest(SSL* ssl, X509** /*cert*/, EVP_PKEY** /*key*/) {
  SSL_set_ex_data(ssl, CertRequestedIndex(), reinterpret_cast<void*>(1));
  return 0;  // no certificate to send
}

// Settings every context shares, ours or cpp-httplib's.
Status ApplyCommon(SSL_CTX* ctx, const TlsSettings& s, TlsRole role) {
  if (s.min_version != "1.3" && s.min_version != "1.2") {
    return Bad("[tls] min_version '" + s.min_version + "': use 1.3 or 1.2");
  }
  SSL_CTX_set_min_proto_version(ctx, VersionOf(s.min_version));
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // AES-128-GCM first: as strong as the data deserves, and the cheapest
  // suite with AES-NI (OpenSSL's default puts AES-256 first).
  SSL_CTX_set_ciphersuites(
      ctx, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256");
  AskForKtls(ctx);
  if (!s.ca.empty()) {
    MC_RETURN_IF_ERROR(CheckReadable(s.ca, "CA"));
    if (SSL_CTX_load_verify_locations(ctx, s.ca.c_str(), nullptr) != 1) {
      return Bad("cannot load TLS CA '" + s.ca + "': " + DrainErrors());
    }
  }
  if (role == TlsRole::kServer) {
    SSL_CTX_set_num_tickets(ctx, 0);  // no writes hidden in a server's SSL_read
    if (s.verify_peer) {
      if (s.ca.empty()) return Bad("[tls] verify_peer needs [tls] ca (the CA of client certificates)");
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(s.ca.c_str())) {
        SSL_CTX_set_client_CA_list(ctx, names);
      }
    }
  } else {
    if (s.ca.empty()) SSL_CTX_set_default_verify_paths(ctx);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    if (s.cert.empty()) SSL_CTX_set_client_cert_cb(ctx, NoteCertificateRequest);
  }
  if (s.cert.empty()) return Status::Ok();
  MC_RETURN_IF_ERROR(CheckCertificateFile(s.cert, "certificate"));
  const std::string& key = s.key.empty() ? s.cert : s.key;
  MC_RETURN_IF_ERROR(CheckReadable(key, "key"));
  if (SSL_CTX_use_certificate_chain_file(ctx, s.cert.c_str()) != 1) {
    return Bad("cannot load TLS certificate '" + s.cert + "': " + DrainErrors());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1 &&
      ERR_GET_REASON(ERR_peek_last_error()) != X509_R_KEY_VALUES_MISMATCH) {
    return Bad("cannot load TLS key '" + key + "': " + DrainErrors());
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    ERR_clear_error();
    return Bad("TLS key '" + key + "' does not match certificate '" + s.cert + "'");
  }
  return Status::Ok();
}

Result<SSL_CTX*> BuildCtx(const TlsSettings& s, TlsRole role) {
  SSL_CTX* ctx = SSL_CTX_new(role == TlsRole::kServer ? TLS_server_method() : TLS_client_method());
  if (ctx == nullptr) return Error(ErrorCode::INTERNAL_ERROR, "SSL_CTX_new: " + DrainErrors());
  Status st = ApplyCommon(ctx, s, role);
  if (!st.ok()) {
    SSL_CTX_free(ctx);
    return st;
  }
  return ctx;
}

// Makes a handshake of a foreign server context use our current certificate.
int SwitchToCurrent(SSL* ssl, int* /*alert*/, void* arg) {
  SSL_CTX* current = static_cast<const TlsContext*>(arg)->AcquireCtx();
  SSL_set_SSL_CTX(ssl, current);
  SSL_CTX_free(current);  // the SSL holds its own reference now
  return SSL_CLIENT_HELLO_SUCCESS;
}

// Waits for `fd` to be ready for what OpenSSL asked; false at the deadline.
bool WaitFor(int fd, int ssl_error, uint64_t deadline_us) {
  short events = ssl_error == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN;
  for (;;) {
    uint64_t now = MonotonicUs();
    if (now >= deadline_us) return false;
    pollfd p{fd, events, 0};
    int ms = static_cast<int>((deadline_us - now + 999) / 1000);
    int rc = ::poll(&p, 1, ms);
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return false;
  }
}

}  // namespace

Status CheckCertificateFile(const std::string& path, const char* what) {
  MC_RETURN_IF_ERROR(CheckReadable(path, what));
  FILE* f = std::fopen(path.c_str(), "r");
  X509* x = f ? PEM_read_X509(f, nullptr, nullptr, nullptr) : nullptr;
  if (f) std::fclose(f);
  if (x == nullptr) {
    ERR_clear_error();
    return Bad(std::string("TLS ") + what + " '" + path + "' holds no PEM certificate");
  }
  Status st;
  if (X509_cmp_current_time(X509_get0_notAfter(x)) < 0) {
    st = Bad(std::string("TLS ") + what + " '" + path + "' expired on " +
             Asn1TimeText(X509_get0_notAfter(x)));
  } else if (X509_cmp_current_time(X509_get0_notBefore(x)) > 0) {
    st = Bad(std::string("TLS ") + what + " '" + path + "' is not valid before " +
             Asn1TimeText(X509_get0_notBefore(x)));
  }
  X509_free(x);
  return st;
}

Result<std::shared_ptr<TlsContext>> TlsContext::Create(const TlsSettings& settings, TlsRole role) {
  if (role == TlsRole::kServer && settings.cert.empty()) {
    return Bad("TLS server needs [tls] cert (and key)");
  }
  MC_ASSIGN_OR_RETURN(SSL_CTX * ctx, BuildCtx(settings, role));
  std::shared_ptr<TlsContext> t(new TlsContext(settings, role));
  t->ctx_ = ctx;
  return t;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

Status TlsContext::Reload() {
  MC_ASSIGN_OR_RETURN(SSL_CTX * fresh, BuildCtx(settings_, role_));
  SSL_CTX* old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    old = ctx_;
    ctx_ = fresh;
    ++reloads_;
  }
  SSL_CTX_free(old);  // freed once the last connection made from it is gone
  return Status::Ok();
}

uint64_t TlsContext::reloads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reloads_;
}

SSL_CTX* TlsContext::AcquireCtx() const {
  std::lock_guard<std::mutex> lock(mu_);
  SSL_CTX_up_ref(ctx_);
  return ctx_;
}

SslPtr TlsContext::NewSsl(int fd) const {
  SSL_CTX* ctx = AcquireCtx();
  SslPtr ssl(SSL_new(ctx));
  SSL_CTX_free(ctx);
  if (!ssl) return ssl;
  SSL_set_fd(ssl.get(), fd);
  if (role_ == TlsRole::kServer) {
    SSL_set_accept_state(ssl.get());
  } else {
    SSL_set_connect_state(ssl.get());
  }
  return ssl;
}

bool TlsContext::AdoptServerCtx(SSL_CTX* ctx) const {
  if (!ApplyCommon(ctx, settings_, TlsRole::kServer).ok()) return false;
  SSL_CTX_set_client_hello_cb(ctx, SwitchToCurrent, const_cast<TlsContext*>(this));
  return true;
}

std::string TlsErrorText(SSL* ssl, int ret, bool* definite) {
  int err = SSL_get_error(ssl, ret);
  bool ignored;
  if (definite == nullptr) definite = &ignored;
  *definite = true;
  unsigned long first = ERR_peek_error();
  int reason = ERR_GET_REASON(first);
  std::string detail = first != 0 ? DrainErrors() : "";
  if (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG ||
      reason == SSL_R_HTTP_REQUEST || reason == SSL_R_UNSUPPORTED_PROTOCOL) {
    if (reason == SSL_R_UNSUPPORTED_PROTOCOL) {
      return "the peer offers no TLS version this node accepts (TLS 1.3 only unless "
             "[tls] min_version = \"1.2\"): " + detail;
    }
    return "the peer does not speak TLS (is TLS configured on both sides?): " + detail;
  }
  if (reason == SSL_R_CERTIFICATE_VERIFY_FAILED) {
    long v = SSL_get_verify_result(ssl);
    return std::string("the peer's certificate did not verify: ") +
           X509_verify_cert_error_string(v);
  }
  if (reason == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED ||
      reason == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE) {
    return "the server requires a client certificate (mutual TLS: set [tls] cert and key): " +
           detail;
  }
  *definite = false;
  if (reason == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
    return "the peer closed the connection during TLS (see its log for why)";
  }
  if (err == SSL_ERROR_SYSCALL) {
    if (errno == 0 || first == 0) return "the peer closed the connection during TLS";
    return std::string("TLS: ") + std::strerror(errno);
  }
  if (err == SSL_ERROR_ZERO_RETURN) return "the peer closed the TLS session";
  return "TLS error: " + (detail.empty() ? std::to_string(err) : detail);
}

Result<SslPtr> TlsHandshake(const TlsContext& ctx, int fd, const std::string& host,
                            uint64_t deadline_us) {
  SslPtr ssl = ctx.NewSsl(fd);
  if (!ssl) return Error(ErrorCode::INTERNAL_ERROR, "SSL_new: " + DrainErrors());
  if (ctx.role() == TlsRole::kClient && !host.empty()) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl.get());
    if (X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) != 1) {
      ERR_clear_error();
      X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
      SSL_set_tlsext_host_name(ssl.get(), host.c_str());
    }
  }
  const bool was_blocking = !(::fcntl(fd, F_GETFL, 0) & O_NONBLOCK);
  if (was_blocking) SetNonBlocking(fd, true);
  Status st;
  for (;;) {
    ERR_clear_error();
    int rc = SSL_do_handshake(ssl.get());
    if (rc == 1) break;
    int err = SSL_get_error(ssl.get(), rc);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      if (WaitFor(fd, err, deadline_us)) continue;
      st = Error(ErrorCode::RPC_TIMEOUT, "TLS handshake timed out");
      break;
    }
    // A peer without TLS or a certificate that does not verify will not
    // change its mind on a retry: PROTOCOL_ERROR, which callers do not retry.
    bool definite = false;
    std::string why = TlsErrorText(ssl.get(), rc, &definite);
    st = Error(definite ? ErrorCode::PROTOCOL_ERROR : ErrorCode::RPC_FAIL,
               "TLS handshake failed: " + why);
    break;
  }
  if (was_blocking) SetNonBlocking(fd, false);
  if (!st.ok()) return st;
  // The blocking users of this handshake read through OpenSSL only, so it
  // may read ahead: a whole socket buffer per read() instead of two reads
  // (header, body) per 16 KiB record. (The RPC server's epoll loop does not
  // come here: read-ahead would hide bytes from epoll.)
  SSL_set_read_ahead(ssl.get(), 1);
  if (SSL_get_ex_data(ssl.get(), CertRequestedIndex()) != nullptr) {
    return Error(ErrorCode::PROTOCOL_ERROR,
                 "TLS handshake failed: the server requires a client certificate (mutual TLS: "
                 "set [tls] cert and key)");
  }
  return ssl;
}

Result<size_t> TlsRead(SSL* ssl, int fd, char* buf, size_t cap, uint64_t deadline_us) {
  for (;;) {
    size_t n = 0;
    ERR_clear_error();
    int rc = SSL_read_ex(ssl, buf, cap, &n);
    if (rc == 1) return n;
    int err = SSL_get_error(ssl, rc);
    if (err == SSL_ERROR_ZERO_RETURN) return size_t{0};
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      if (deadline_us != 0 && WaitFor(fd, err, deadline_us)) continue;
      return Error(ErrorCode::RPC_TIMEOUT, "receive timed out");
    }
    if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && errno == 0) return size_t{0};
    return Error(ErrorCode::RPC_FAIL, TlsErrorText(ssl, rc));
  }
}

Status TlsWrite(SSL* ssl, int fd, const char* data, size_t len, uint64_t deadline_us) {
  size_t done = 0;
  while (done < len) {
    size_t n = 0;
    ERR_clear_error();
    int rc = SSL_write_ex(ssl, data + done, len - done, &n);
    if (rc == 1) {
      done += n;
      continue;
    }
    int err = SSL_get_error(ssl, rc);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      if (deadline_us != 0 && WaitFor(fd, err, deadline_us)) continue;
      return Error(ErrorCode::RPC_TIMEOUT, "send timed out");
    }
    return Error(ErrorCode::RPC_FAIL, TlsErrorText(ssl, rc));
  }
  return Status::Ok();
}

std::string TlsDescribe(SSL* ssl) {
  std::string out = std::string(SSL_get_version(ssl)) + " " + SSL_get_cipher_name(ssl);
#ifdef SSL_OP_ENABLE_KTLS
  out += std::string(", kernel TLS send ") + (BIO_get_ktls_send(SSL_get_wbio(ssl)) ? "on" : "off");
  out += std::string(", receive ") + (BIO_get_ktls_recv(SSL_get_rbio(ssl)) ? "on" : "off");
#else
  out += ", kernel TLS: not built into OpenSSL";
#endif
  return out;
}

std::string KtlsText() {
#ifdef SSL_OP_ENABLE_KTLS
  std::string out = std::string("OpenSSL ") + OpenSSL_version(OPENSSL_VERSION_STRING) +
                    " built with kernel TLS; kernel: ";
  // The `tls` upper-layer protocol can only be set on a connected socket.
  int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof a;
  bool ok = false;
  int err = 0;
  if (::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(l, 1) == 0 &&
      ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &alen) == 0) {
    int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
      ok = ::setsockopt(c, SOL_TCP, TCP_ULP, "tls", sizeof "tls") == 0;
      err = errno;
    }
    ::close(c);
  }
  ::close(l);
  return out + (ok ? "tls module available (kernel TLS used where the cipher allows)"
                   : std::string("no tls module (") + std::strerror(err) +
                         "), so TLS runs in user space");
#else
  return "OpenSSL built without kernel TLS: TLS runs in user space";
#endif
}

}  // namespace mc::net

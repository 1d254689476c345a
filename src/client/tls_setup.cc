#include "client/tls_setup.h"

#include "common/log.h"

namespace mc::client {

net::TlsSettings TlsSettingsOf(const TlsConfig& tls) {
  return net::TlsSettings{tls.cert, tls.key, tls.ca, tls.verify_peer, tls.min_version};
}

Result<std::shared_ptr<net::TlsContext>> ClientTls(const TlsConfig& tls) {
  net::TlsSettings s = TlsSettingsOf(tls);
  if (!s.client_enabled()) return std::shared_ptr<net::TlsContext>();
  return net::TlsContext::Create(s, net::TlsRole::kClient);
}

Result<std::shared_ptr<net::TlsContext>> ServerTls(const TlsConfig& tls) {
  net::TlsSettings s = TlsSettingsOf(tls);
  if (!s.server_enabled()) return std::shared_ptr<net::TlsContext>();
  auto ctx = net::TlsContext::Create(s, net::TlsRole::kServer);
  if (ctx.ok()) {
    MC_LOG(INFO) << "TLS on the data port (certificate " << s.cert << ", TLS " << s.min_version
                 << "+" << (s.verify_peer ? ", client certificates required" : "")
                 << "); " << net::KtlsText();
  }
  return ctx;
}

}  // namespace mc::client

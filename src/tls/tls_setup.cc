#include "tls/tls_setup.h"

#include "common/log.h"

namespace mc {

net::TlsSettings TlsSettingsOf(const TlsConfig& tls) {
  return net::TlsSettings{tls.cert, tls.key, tls.ca, tls.verify_peer, tls.min_version};
}

Result<std::shared_ptr<net::TlsContext>> ClientTls(const TlsConfig& tls) {
  net::TlsSettings s = TlsSettingsOf(tls);
  if (!s.client_enabled()) return std::shared_ptr<net::TlsContext>();
  return net::TlsContext::Create(s, net::TlsRole::kClient);
}

Result<std::shared_ptr<net::TlsContext>> ServerTls(const TlsConfig& tls, ServerTlsLog log) {
  net::TlsSettings s = TlsSettingsOf(tls);
  if (!s.server_enabled()) {
    if (s.client_enabled() && log.without_cert != nullptr) {
      MC_LOG(WARN) << log.without_cert;
    }
    return std::shared_ptr<net::TlsContext>();
  }
  auto ctx = net::TlsContext::Create(s, net::TlsRole::kServer);
  if (ctx.ok() && log.listeners != nullptr) {
    MC_LOG(INFO) << "TLS on " << log.listeners << " (certificate " << s.cert << ", TLS "
                 << s.min_version << "+"
                 << (s.verify_peer ? ", client certificates required" : "") << "); "
                 << net::KtlsText();
  }
  return ctx;
}

std::function<bool(ssl_ctx_st&)> HttpServerTls(std::shared_ptr<net::TlsContext> tls) {
  if (!tls) return {};
  return [tls = std::move(tls)](ssl_ctx_st& ctx) { return tls->AdoptServerCtx(&ctx); };
}

void ReloadTls(net::TlsContext* tls) {
  if (tls == nullptr) {
    MC_LOG(INFO) << "SIGHUP: no TLS configured, nothing to reload";
    return;
  }
  LogTlsReload(tls->Reload());
}

void LogTlsReload(const Status& reloaded) {
  if (reloaded.ok()) {
    MC_LOG(INFO) << "SIGHUP: TLS certificates reloaded (open connections keep theirs)";
  } else {
    MC_LOG(ERROR) << "SIGHUP: TLS reload failed, keeping the old certificates: "
                  << reloaded.message();
  }
}

}  // namespace mc

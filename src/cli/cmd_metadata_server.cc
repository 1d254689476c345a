// `mooncake metadata-server`: the HTTP metadata key-value service, standalone.
// Runs until SIGINT or SIGTERM, then stops cleanly (exit 0); SIGHUP reloads
// the TLS certificates.
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "common/log.h"
#include "common/sd_notify.h"
#include "config/command_config.h"
#include "config/config.h"
#include "metadata/kv_store.h"
#include "metadata/metadata_server.h"
#include "tls/tls_setup.h"

namespace mc::cli {

namespace {

int RunMetadataServer(const MetadataServerConfig& config, const TlsConfig& tls_config) {
  // Block the stop signals before any thread starts, so every thread inherits
  // the mask and only sigwait() below sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);  // reload the TLS certificates
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  // No log line of its own: the listening line below says where it serves.
  auto t = ServerTls(tls_config, {});
  if (!t.ok()) {
    std::fprintf(stderr, "mooncake metadata-server: error: %s\n", t.status().message().c_str());
    return kExitUsage;
  }
  std::shared_ptr<net::TlsContext> tls = *t;
  metadata::HttpTlsSetup http_tls = HttpServerTls(tls);

  auto server = metadata::MetadataServer::Open(config);
  if (!server.ok()) {
    std::fprintf(stderr, "mooncake metadata-server: error: %s\n",
                 server.status().message().c_str());
    return kExitUsage;
  }
  Status st = (*server)->Start(config.host, config.port, http_tls);
  if (!st.ok()) {
    std::fprintf(stderr, "mooncake metadata-server: error: %s\n", st.message().c_str());
    return kExitFailure;
  }
  MC_LOG(INFO) << "metadata server listening on " << config.host << ":" << (*server)->port()
               << " (" << (config.db.empty() ? "memory only" : "database " + config.db)
               << ", " << (*server)->store().size() << " keys)";
  NotifyServiceManager("READY=1");
  int sig = 0;
  while (sigwait(&stop_signals, &sig) == 0 && sig == SIGHUP) ReloadTls(tls.get());
  MC_LOG(INFO) << "metadata server stopping on " << (sig == SIGINT ? "SIGINT" : "SIGTERM");
  NotifyServiceManager("STOPPING=1");
  (*server)->Stop();
  return kExitOk;
}

}  // namespace

RunFn SetupMetadataServer(CLI::App& sub) {
  constexpr unsigned kSections = config::kMetadataServer | config::kLog | config::kTls;
  auto cc = std::make_shared<config::CommandConfig>(sub, kSections, /*is_server=*/true);
  return [cc] {
    return config::RunWithConfig("metadata-server", *cc, kSections, [](const Config& config) {
      LogLevel level;
      if (ParseLogLevel(config.log.level, &level)) SetLogLevel(level);
      return RunMetadataServer(config.metadata_server, config.tls);
    });
  };
}

}  // namespace mc::cli

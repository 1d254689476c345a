#include "masterd/master_daemon.h"

#include <cstdio>

#include "common/clock.h"
#include "common/log.h"
#include "common/signals.h"
#include "masterd/admin_http.h"
#include "masterd/rpc_glue.h"
#include "masterd/service.h"
#include "metadata/metadata_server.h"

namespace mc::masterd {

namespace {
constexpr uint64_t kTickIntervalMs = 100;
}

int RunMaster(const Config& config) {
  InstallStopSignals();
  const MasterConfig& mc = config.master;
  MasterService service(mc, SystemClock::Instance());

  std::unique_ptr<metadata::MetadataServer> meta;
  if (mc.enable_http_metadata_server) {
    MetadataServerConfig mcfg = config.metadata_server;
    mcfg.host = mc.http_metadata_server_host;
    mcfg.port = mc.http_metadata_server_port;
    auto m = metadata::MetadataServer::Open(mcfg);
    Status st = m.ok() ? (*m)->Start(mcfg.host, mcfg.port) : m.status();
    if (!st.ok()) {
      std::fprintf(stderr, "mooncake master: embedded metadata server: %s\n", st.ToString().c_str());
      return 1;
    }
    meta = std::move(*m);
    MC_LOG(INFO) << "embedded metadata server listening on " << mcfg.host << ":" << meta->port();
  }

  AdminHttp admin(service);
  Status st = admin.Start(mc.rpc_address, mc.metrics_port);
  if (!st.ok()) {
    std::fprintf(stderr, "mooncake master: %s\n", st.ToString().c_str());
    return 1;
  }

  auto rpc = StartRpcServer(service, config);
  if (!rpc.ok()) {
    std::fprintf(stderr, "mooncake master: %s\n", rpc.status().ToString().c_str());
    return 1;
  }
  MC_LOG(INFO) << "master listening on " << mc.rpc_address << ":" << mc.rpc_port
               << " (admin http on port " << mc.metrics_port << ")";

  uint64_t since_log_us = 0;
  while (!WaitForStop(kTickIntervalMs)) {
    service.Tick();
    since_log_us += kTickIntervalMs * 1000;
    if (mc.metrics_log_interval_us > 0 && since_log_us >= mc.metrics_log_interval_us) {
      since_log_us = 0;
      MC_LOG(INFO) << "Master Metrics: " << service.Summary();
    }
  }
  MC_LOG(INFO) << "stopping master";
  (*rpc)->Stop();
  admin.Stop();
  if (meta) meta->Stop();
  return 0;
}

}  // namespace mc::masterd

#include "masterd/rpc_glue.h"

#include "masterd/service.h"
#include "tls/tls_setup.h"

namespace mc::masterd {

Result<std::shared_ptr<net::TlsContext>> MasterServerTls(const TlsConfig& tls) {
  return ServerTls(tls, {.listeners = "every port",
                         .without_cert = "[tls] ca without cert: the master listens without TLS"});
}

Result<std::unique_ptr<rpc::Server>> StartRpcServer(MasterService& service, const Config& config,
                                                    rpc::ReplyGate* reply_gate,
                                                    std::shared_ptr<net::TlsContext> tls) {
  rpc::ServerOptions o;
  o.address = config.master.rpc_address;
  o.port = config.master.rpc_port;
  o.auth_token = config.cluster.auth_token;
  o.max_connections = config.master.max_connections;
  o.reply_gate = reply_gate;
  o.parking = &service.parking();
  o.tls = std::move(tls);
  auto server = std::make_unique<rpc::Server>(o, &service);
  MC_RETURN_IF_ERROR(server->Start());
  return server;
}

}  // namespace mc::masterd

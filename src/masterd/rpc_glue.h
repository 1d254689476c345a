// Starting the master's RPC server with MasterService as its handler.
#pragma once

#include <memory>

#include "common/result.h"
#include "config/config.h"
#include "rpc/server.h"

namespace mc::masterd {

class MasterService;

// The master's one server TLS context for every port (RPC, admin HTTP,
// embedded metadata), from [tls]; null without a cert.
Result<std::shared_ptr<net::TlsContext>> MasterServerTls(const TlsConfig& tls);

// `reply_gate` (may be null): see rpc::ReplyGate; the journal's when the
// master has a --data-dir.
// `tls`: server TLS context, null for plain TCP.
Result<std::unique_ptr<rpc::Server>> StartRpcServer(MasterService& service, const Config& config,
                                                    rpc::ReplyGate* reply_gate = nullptr,
                                                    std::shared_ptr<net::TlsContext> tls = nullptr);

}  // namespace mc::masterd

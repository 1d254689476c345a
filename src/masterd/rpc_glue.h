// Starting the master's RPC server with MasterService as its handler.
#pragma once

#include <memory>

#include "common/result.h"
#include "config/config.h"
#include "rpc/server.h"

namespace mc::masterd {

class MasterService;

// `before_reply` (may be empty): see rpc::ServerOptions; the journal's
// durability barrier when the master has a --data-dir.
Result<std::unique_ptr<rpc::Server>> StartRpcServer(MasterService& service, const Config& config,
                                                    std::function<bool()> before_reply = {});

}  // namespace mc::masterd

// Starting the master's RPC server with MasterService as its handler.
#pragma once

#include <memory>

#include "common/result.h"
#include "config/config.h"
#include "rpc/server.h"

namespace mc::masterd {

class MasterService;

Result<std::unique_ptr<rpc::Server>> StartRpcServer(MasterService& service, const Config& config);

}  // namespace mc::masterd

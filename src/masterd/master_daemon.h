// The `mooncake master` process: the RPC server around MasterService, the
// admin HTTP endpoint, the optional embedded metadata server, the periodic
// Tick and the "Master Metrics:" log line. Runs until a stop signal.
#pragma once

#include "config/config.h"

namespace mc::masterd {

// Returns the process exit code.
int RunMaster(const Config& config);

}  // namespace mc::masterd

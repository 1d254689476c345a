// The `mooncake store` process: reserves a segment, serves transfers from
// it, mounts it on the master, publishes its descriptor to the metadata
// server, heartbeats (remounting when the master asks), and unmounts on
// SIGTERM. Runs until a stop signal.
#pragma once

#include "config/config.h"

namespace mc::store {

// Returns the process exit code.
int RunStore(const Config& config);

}  // namespace mc::store

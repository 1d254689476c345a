// The `mooncake store` process: reserves a segment, serves transfers from
// it, mounts it on the master, publishes its descriptor to the metadata
// server, heartbeats (remounting when the master asks), and unmounts on
// SIGTERM. Runs until a stop signal (OK), or fails at once on a setup error
// or a refused auth token (AUTH_FAILED), which retrying cannot fix.
#pragma once

#include "common/result.h"
#include "config/config.h"

namespace mc::store {

Status RunStore(const Config& config);

}  // namespace mc::store

// How the engine library turns what an engine passes to setup() into our
// Config: defaults < MOONCAKE_CONFIG_PATH (mooncake.json) < MOONCAKE_*
// environment < the keys given to setup(), under the reference's names.
// Pure given its arguments; thread-safe.
#pragma once

#include <map>
#include <string>

#include "common/result.h"
#include "config/config.h"
#include "config/sources.h"

namespace mc::engine {

// Errors (INVALID_PARAMS) name the key and the reason ("global_segment_size:
// '4xb': unknown size suffix ..."). Keys we do not use (the reference's
// ipc_socket_path, tenant_id, ...) are ignored.
Result<Config> ResolveSetupConfig(const std::map<std::string, std::string>& given,
                                  const config::GetEnvFn& getenv);

}  // namespace mc::engine

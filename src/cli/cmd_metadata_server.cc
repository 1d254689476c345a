// `mooncake metadata-server`.
#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace mc::cli {

RunFn SetupMetadataServer(CLI::App&) { return NotBuilt("metadata-server"); }

}  // namespace mc::cli

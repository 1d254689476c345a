// `mooncake exists`.
#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace mc::cli {

RunFn SetupExists(CLI::App&) { return NotBuilt("exists"); }

}  // namespace mc::cli

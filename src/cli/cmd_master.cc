// `mooncake master`.
#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace mc::cli {

RunFn SetupMaster(CLI::App&) { return NotBuilt("master"); }

}  // namespace mc::cli

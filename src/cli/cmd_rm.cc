// `mooncake rm`.
#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace mc::cli {

RunFn SetupRm(CLI::App&) { return NotBuilt("rm"); }

}  // namespace mc::cli

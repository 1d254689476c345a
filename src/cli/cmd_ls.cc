// `mooncake ls`.
#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace mc::cli {

RunFn SetupLs(CLI::App&) { return NotBuilt("ls"); }

}  // namespace mc::cli

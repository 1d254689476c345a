// `mooncake get`.
#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace mc::cli {

RunFn SetupGet(CLI::App&) { return NotBuilt("get"); }

}  // namespace mc::cli

// `mooncake bench`.
#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace mc::cli {

RunFn SetupBench(CLI::App&) { return NotBuilt("bench"); }

}  // namespace mc::cli

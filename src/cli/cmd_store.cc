// `mooncake store`.
#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace mc::cli {

RunFn SetupStore(CLI::App&) { return NotBuilt("store"); }

}  // namespace mc::cli

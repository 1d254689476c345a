// `mooncake put`.
#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace mc::cli {

RunFn SetupPut(CLI::App&) { return NotBuilt("put"); }

}  // namespace mc::cli

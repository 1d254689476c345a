// Subcommands that are not built yet. Each moves to its own cmd_*.cc when it
// is implemented.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cli/command.h"

namespace mc::cli {

RunFn NotBuilt(const char* name) {
  return [name] {
    std::fprintf(stderr, "mooncake %s: not implemented yet\n", name);
    return static_cast<int>(kExitNotBuilt);
  };
}

RunFn SetupMaster(CLI::App&) { return NotBuilt("master"); }
RunFn SetupStore(CLI::App&) { return NotBuilt("store"); }
RunFn SetupMetadataServer(CLI::App&) { return NotBuilt("metadata-server"); }
RunFn SetupPut(CLI::App&) { return NotBuilt("put"); }
RunFn SetupGet(CLI::App&) { return NotBuilt("get"); }
RunFn SetupLs(CLI::App&) { return NotBuilt("ls"); }
RunFn SetupRm(CLI::App&) { return NotBuilt("rm"); }
RunFn SetupExists(CLI::App&) { return NotBuilt("exists"); }
RunFn SetupBench(CLI::App&) { return NotBuilt("bench"); }

}  // namespace mc::cli

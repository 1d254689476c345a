// The subcommands of the `mooncake` binary. Each lives in its own cmd_*.cc,
// adds its options to the CLI11 subcommand it is given, and returns the
// function main() runs when that subcommand is chosen. Exit codes are the
// contract of ExitCode below.
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace mc::cli {

// Process exit codes, documented in mooncake(1). Scripts rely on them.
enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,       // generic failure; `exists`: key absent
  kExitUsage = 2,         // bad flag, bad config, bad argument
  kExitNotFound = 3,      // key not found (get, rm)
  kExitUnavailable = 4,   // master or store unreachable
  kExitExists = 5,        // put: key already exists
  kExitNoSpace = 6,       // put: no space in the pool
  kExitAuth = 7,          // authentication refused
};

using RunFn = std::function<int()>;

RunFn SetupMaster(CLI::App& sub);
RunFn SetupStore(CLI::App& sub);
RunFn SetupClient(CLI::App& sub);
RunFn SetupMetadataServer(CLI::App& sub);
RunFn SetupPut(CLI::App& sub);
RunFn SetupGet(CLI::App& sub);
RunFn SetupLs(CLI::App& sub);
RunFn SetupRm(CLI::App& sub);
RunFn SetupExists(CLI::App& sub);
RunFn SetupBench(CLI::App& sub);
RunFn SetupVersion(CLI::App& sub);
RunFn SetupCompletion(CLI::App& sub);

}  // namespace mc::cli

// Helper for subcommands that are not built yet.
#include <cstdio>

#include "cli/command.h"

namespace mc::cli {

RunFn NotBuilt(const char* name) {
  return [name] {
    std::fprintf(stderr, "mooncake %s: not implemented yet\n", name);
    return static_cast<int>(kExitNotBuilt);
  };
}

}  // namespace mc::cli

// `mooncake master`.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "config/command_config.h"

namespace mc::cli {

RunFn SetupMaster(CLI::App& sub) {
  constexpr unsigned kSections = config::kMaster | config::kCluster | config::kLog;
  auto cc = std::make_shared<config::CommandConfig>(sub, kSections, /*is_server=*/true);
  return [cc] {
    return config::RunWithConfig("master", *cc, kSections, [](const Config&) {
      std::fprintf(stderr, "mooncake master: not implemented yet\n");
      return static_cast<int>(kExitNotBuilt);
    });
  };
}

}  // namespace mc::cli

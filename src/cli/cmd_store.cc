// `mooncake store`.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "config/command_config.h"
#include "store/store_daemon.h"

namespace mc::cli {

RunFn SetupStore(CLI::App& sub) {
  constexpr unsigned kSections =
      config::kStore | config::kCluster | config::kClient | config::kLog;
  auto cc = std::make_shared<config::CommandConfig>(sub, kSections, /*is_server=*/true);
  return [cc] {
    return config::RunWithConfig("store", *cc, kSections, [](const Config& config) {
      return store::RunStore(config);
    });
  };
}

}  // namespace mc::cli

// `mooncake master`.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "config/command_config.h"
#include "config/ref_flags.h"
#include "masterd/master_daemon.h"

namespace mc::cli {

RunFn SetupMaster(CLI::App& sub) {
  constexpr unsigned kSections =
      config::kMaster | config::kHa | config::kCluster | config::kLog | config::kTls;
  auto cc = std::make_shared<config::CommandConfig>(sub, kSections, /*is_server=*/true,
                                                    config::RefMasterFlags());
  return [cc] {
    return config::RunWithConfig("master", *cc, kSections, [](const Config& config) {
      return masterd::RunMaster(config);
    });
  };
}

}  // namespace mc::cli

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
  sub.footer("The reference's mooncake_master command line is accepted too: gflags spellings "
             "(-port=50051, -v=1, --noNAME), its other flags (accepted without effect and "
             "logged, or refused by name when they turn on a feature not built here) and "
             "--config_path master.json; see mooncake-master(1), REFERENCE FLAGS.");
  return [cc] {
    return config::RunWithConfig("master", *cc, kSections, [](const Config& config) {
      return masterd::RunMaster(config);
    });
  };
}

}  // namespace mc::cli

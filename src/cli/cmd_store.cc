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
      config::kStore | config::kCluster | config::kClient | config::kLog | config::kTls;
  auto cc = std::make_shared<config::CommandConfig>(sub, kSections, /*is_server=*/true);
  return [cc] {
    return config::RunWithConfig("store", *cc, kSections, [](const Config& config) {
      Status st = store::RunStore(config);
      if (st.ok()) return static_cast<int>(kExitOk);
      std::fprintf(stderr, "mooncake store: %s\n", st.ToString().c_str());
      // A segment that cannot fit (or a bad size) is the operator's request
      // to change, like a bad flag: exit 2.
      if (st.code() == ErrorCode::INVALID_PARAMS) return static_cast<int>(kExitUsage);
      return static_cast<int>(st.code() == ErrorCode::AUTH_FAILED ? kExitAuth : kExitFailure);
    });
  };
}

}  // namespace mc::cli

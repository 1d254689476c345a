// `mooncake exists KEY`: exit 0 if present, 1 if not (other failures > 1).
#include <CLI/CLI.hpp>

#include <memory>

#include "cli/client_common.h"
#include "cli/command.h"
#include "config/command_config.h"

namespace mc::cli {

namespace {
constexpr unsigned kSections = config::kCluster | config::kClient | config::kLog | config::kTls;
}

RunFn SetupExists(CLI::App& sub) {
  struct Args {
    std::string key;
    std::unique_ptr<config::CommandConfig> cc;
  };
  auto args = std::make_shared<Args>();
  sub.add_option("key", args->key, "Key to check")->required();
  args->cc = std::make_unique<config::CommandConfig>(sub, kSections, false);
  return [args] {
    return config::RunWithConfig("exists", *args->cc, kSections, [&](const Config& config) {
      auto client = client::Client::Connect(config);
      if (!client.ok()) return ReportError("exists", args->key, client.status());
      auto present = (*client)->Exists(args->key);
      if (!present.ok()) {
        int code = ReportError("exists", args->key, present.status());
        return code == kExitFailure ? static_cast<int>(kExitUnavailable) : code;
      }
      return *present ? static_cast<int>(kExitOk) : static_cast<int>(kExitFailure);
    });
  };
}

}  // namespace mc::cli

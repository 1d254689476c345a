// `mooncake rm KEY...`: removes objects; fails if any could not be removed.
#include <CLI/CLI.hpp>

#include <memory>
#include <vector>

#include "cli/client_common.h"
#include "cli/command.h"
#include "config/command_config.h"

namespace mc::cli {

namespace {
constexpr unsigned kSections = config::kCluster | config::kClient | config::kLog | config::kTls;
}

RunFn SetupRm(CLI::App& sub) {
  struct Args {
    std::vector<std::string> keys;
    bool force = false;
    std::unique_ptr<config::CommandConfig> cc;
  };
  auto args = std::make_shared<Args>();
  sub.add_option("keys", args->keys, "Keys to remove")->required();
  sub.add_flag("-f,--force", args->force, "Remove even objects under a read lease");
  args->cc = std::make_unique<config::CommandConfig>(sub, kSections, false);
  return [args] {
    return config::RunWithConfig("rm", *args->cc, kSections, [&](const Config& config) {
      auto client = client::Client::Connect(config);
      if (!client.ok()) return ReportError("rm", "", client.status());
      int worst = kExitOk;
      for (const std::string& key : args->keys) {
        Status st = (*client)->Remove(key, args->force);
        if (!st.ok()) {
          int code = ReportError("rm", key, st);
          if (worst == kExitOk) worst = code;
        }
      }
      return worst;
    });
  };
}

}  // namespace mc::cli

// `mooncake get KEY [-o FILE]`: writes the object to stdout or a file.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "cli/client_common.h"
#include "cli/command.h"
#include "config/command_config.h"

namespace mc::cli {

namespace {
constexpr unsigned kSections = config::kCluster | config::kClient | config::kLog;
}

RunFn SetupGet(CLI::App& sub) {
  struct Args {
    std::string key;
    std::string output;
    std::unique_ptr<config::CommandConfig> cc;
  };
  auto args = std::make_shared<Args>();
  sub.add_option("key", args->key, "Key of the object")->required();
  sub.add_option("-o,--output", args->output, "Write to FILE instead of stdout");
  args->cc = std::make_unique<config::CommandConfig>(sub, kSections, false);
  return [args] {
    return config::RunWithConfig("get", *args->cc, kSections, [&](const Config& config) {
      auto client = client::Client::Connect(config);
      if (!client.ok()) return ReportError("get", args->key, client.status());
      auto data = (*client)->Get(args->key);
      if (!data.ok()) return ReportError("get", args->key, data.status());
      FILE* out = stdout;
      if (!args->output.empty() && args->output != "-") {
        out = std::fopen(args->output.c_str(), "wb");
        if (out == nullptr) {
          return ReportError("get", args->key,
                             Error(ErrorCode::INVALID_PARAMS,
                                   "cannot open '" + args->output + "' for writing"));
        }
      }
      bool ok = data->empty() || std::fwrite(data->data(), 1, data->size(), out) == data->size();
      ok = (out == stdout ? std::fflush(out) : std::fclose(out)) == 0 && ok;
      if (!ok) {
        return ReportError("get", args->key,
                           Error(ErrorCode::WRITE_FAIL, "writing the output failed"));
      }
      return static_cast<int>(kExitOk);
    });
  };
}

}  // namespace mc::cli

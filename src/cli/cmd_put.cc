// `mooncake put KEY [FILE|-]`: stores a file or stdin under KEY.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <vector>

#include "cli/client_common.h"
#include "cli/command.h"
#include "config/command_config.h"

namespace mc::cli {

namespace {

constexpr unsigned kSections = config::kCluster | config::kClient | config::kLog | config::kTls;

struct PutArgs {
  std::string key;
  std::string file = "-";
  bool soft_pin = false;
  std::unique_ptr<config::CommandConfig> cc;
};

Result<std::vector<uint8_t>> ReadInput(const std::string& file) {
  std::vector<uint8_t> data;
  if (file == "-") {
    uint8_t buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) data.insert(data.end(), buf, buf + n);
    if (std::ferror(stdin)) return Error(ErrorCode::INVALID_PARAMS, "cannot read stdin");
    return data;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return Error(ErrorCode::INVALID_PARAMS, "cannot open '" + file + "'");
  data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) return Error(ErrorCode::INVALID_PARAMS, "cannot read '" + file + "'");
  return data;
}

}  // namespace

RunFn SetupPut(CLI::App& sub) {
  auto args = std::make_shared<PutArgs>();
  sub.add_option("key", args->key, "Key to store the object under")->required();
  sub.add_option("file", args->file, "File to read, or - for stdin")->type_name("FILE")->default_str("-");
  sub.add_flag("--soft-pin", args->soft_pin,
               "Evict this object only after every unpinned one (until the pin TTL)");
  args->cc = std::make_unique<config::CommandConfig>(sub, kSections, false);
  return [args] {
    return config::RunWithConfig("put", *args->cc, kSections, [&](const Config& config) {
      auto data = ReadInput(args->file);
      if (!data.ok()) return ReportError("put", args->key, data.status());
      auto client = client::Client::Connect(config);
      if (!client.ok()) return ReportError("put", args->key, client.status());
      msg::PutOptions options;
      options.replicas = config.client.replicas;  // --replicas, [client] replicas
      options.soft_pin = args->soft_pin;
      Status st = (*client)->Put(args->key, *data, options);
      if (!st.ok()) return ReportError("put", args->key, st);
      return static_cast<int>(kExitOk);
    });
  };
}

}  // namespace mc::cli

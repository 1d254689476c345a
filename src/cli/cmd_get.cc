// `mooncake get KEY [-o FILE]`: writes the object to stdout or a file.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "cli/client_common.h"
#include "cli/command.h"
#include "common/crypto.h"
#include "common/json_escape.h"
#include "config/command_config.h"

namespace mc::cli {

namespace {
constexpr unsigned kSections = config::kCluster | config::kClient | config::kLog | config::kTls;

// One JSON line: the object's buffers with the read grants the master gave
// this client, so a test or an operator can see exactly what a data port
// will accept (the grants are only as secret as the cluster token).
std::string GrantsJson(const std::string& key, const msg::GetReplicaListReply& reply) {
  std::string out = "{\"key\":\"" + JsonEscape(key) + "\",\"size\":" +
                    std::to_string(reply.size_bytes) + ",\"replicas\":[";
  for (size_t r = 0; r < reply.replicas.size(); ++r) {
    out += r ? ",[" : "[";
    const auto& buffers = reply.replicas[r].buffers;
    for (size_t i = 0; i < buffers.size(); ++i) {
      const msg::BufferDesc& b = buffers[i];
      out += std::string(i ? "," : "") + "{\"segment\":\"" + JsonEscape(b.segment_name) +
             "\",\"endpoint\":\"" + JsonEscape(b.endpoint) + "\",\"offset\":" +
             std::to_string(b.offset) + ",\"size\":" + std::to_string(b.size_bytes) +
             ",\"expiry_unix_ms\":" + std::to_string(b.capability_expiry_unix_ms) +
             ",\"term\":" + std::to_string(b.capability_term) +
             ",\"capability\":\"" + HexEncode(b.capability) + "\"}";
    }
    out += "]";
  }
  return out + "]}\n";
}

}  // namespace

RunFn SetupGet(CLI::App& sub) {
  struct Args {
    std::string key;
    std::string output;
    bool print_grants = false;
    std::unique_ptr<config::CommandConfig> cc;
  };
  auto args = std::make_shared<Args>();
  sub.add_option("key", args->key, "Key of the object")->required();
  sub.add_option("-o,--output", args->output, "Write to FILE instead of stdout")->type_name("FILE");
  sub.add_flag("--print-grants", args->print_grants,
               "Print the replicas' locations and read grants as JSON instead of the bytes");
  args->cc = std::make_unique<config::CommandConfig>(sub, kSections, false);
  return [args] {
    return config::RunWithConfig("get", *args->cc, kSections, [&](const Config& config) {
      auto client = client::Client::Connect(config);
      if (!client.ok()) return ReportError("get", args->key, client.status());
      if (args->print_grants) {
        auto where = (*client)->Locate(args->key);
        if (!where.ok()) return ReportError("get", args->key, where.status());
        std::fputs(GrantsJson(args->key, *where).c_str(), stdout);
        return std::fflush(stdout) == 0 ? static_cast<int>(kExitOk) : 1;
      }
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

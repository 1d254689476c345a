// `mooncake ls [PREFIX] [-l] [--json]`: lists keys, paging through the master.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/client_common.h"
#include "cli/command.h"
#include "common/json_escape.h"
#include "config/command_config.h"

namespace mc::cli {

namespace {

constexpr unsigned kSections = config::kCluster | config::kClient | config::kLog | config::kTls;
constexpr uint32_t kPageKeys = 1000;

}  // namespace

RunFn SetupLs(CLI::App& sub) {
  struct Args {
    std::string prefix;
    bool long_format = false;
    bool json = false;
    std::unique_ptr<config::CommandConfig> cc;
  };
  auto args = std::make_shared<Args>();
  sub.add_option("prefix", args->prefix, "Only keys starting with PREFIX");
  sub.add_flag("-l,--long", args->long_format, "Show size in bytes, replicas and pin per key");
  sub.add_flag("--json", args->json, "One JSON array of {key, size, replicas, soft_pinned}");
  args->cc = std::make_unique<config::CommandConfig>(sub, kSections, false);
  return [args] {
    return config::RunWithConfig("ls", *args->cc, kSections, [&](const Config& config) {
      auto client = client::Client::Connect(config);
      if (!client.ok()) return ReportError("ls", "", client.status());
      msg::ListKeysRequest req;
      req.prefix = args->prefix;
      req.limit = kPageKeys;
      bool first = true;
      if (args->json) std::fputs("[", stdout);
      do {
        auto page = (*client)->List(req);
        if (!page.ok()) return ReportError("ls", "", page.status());
        for (const msg::KeyInfo& k : page->keys) {
          if (args->json) {
            std::printf("%s{\"key\":\"%s\",\"size\":%llu,\"replicas\":%u,\"soft_pinned\":%s}",
                        first ? "" : ",", JsonEscape(k.key).c_str(),
                        static_cast<unsigned long long>(k.size_bytes), k.replicas,
                        k.soft_pinned ? "true" : "false");
          } else if (args->long_format) {
            std::printf("%12llu %u %s %s\n", static_cast<unsigned long long>(k.size_bytes),
                        k.replicas, k.soft_pinned ? "pinned" : "-", k.key.c_str());
          } else {
            std::printf("%s\n", k.key.c_str());
          }
          first = false;
        }
        req.cursor = page->next_cursor;
      } while (!req.cursor.empty());
      if (args->json) std::puts("]");
      return static_cast<int>(kExitOk);
    });
  };
}

}  // namespace mc::cli

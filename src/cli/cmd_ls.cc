// `mooncake ls [PREFIX] [-l] [--json]`: lists keys, paging through the master,
// each with its tier (memory, disk, both: ListKeysTiered; ListKeys from a
// master without it, every key in memory).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/client_common.h"
#include "cli/command.h"
#include "common/json_escape.h"
#include "config/command_config.h"
#include "msg/tier_messages.h"
#include "rpc/client.h"
#include "tls/tls_setup.h"

namespace mc::cli {

namespace {

constexpr unsigned kSections = config::kCluster | config::kClient | config::kLog | config::kTls;
constexpr uint32_t kPageKeys = 1000;

const char* TierName(uint8_t tier) {
  switch (static_cast<msg::KeyTier>(tier)) {
    case msg::KeyTier::kMemory: return "memory";
    case msg::KeyTier::kDisk: return "disk";
    case msg::KeyTier::kBoth: return "both";
  }
  return "?";
}

// One page with tiers; from a master that predates ListKeysTiered, its
// ListKeys page with every key in memory.
Result<msg::TieredListKeysReply> Page(rpc::MasterClient& master, const msg::ListKeysRequest& req) {
  auto tiered = master.Invoke<proto::Opcode::kListKeysTiered>(req);
  if (tiered.ok() || tiered.code() != ErrorCode::NOT_SUPPORTED) return tiered;
  MC_ASSIGN_OR_RETURN(msg::ListKeysReply plain, master.Invoke<proto::Opcode::kListKeys>(req));
  msg::TieredListKeysReply r;
  r.tiers.assign(plain.keys.size(), static_cast<uint8_t>(msg::KeyTier::kMemory));
  r.list = std::move(plain);
  return r;
}

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
  sub.add_flag("-l,--long", args->long_format,
               "Show size in bytes, replicas, pin and tier (memory, disk, both) per key");
  sub.add_flag("--json", args->json, "One JSON array of {key, size, replicas, soft_pinned, tier}");
  args->cc = std::make_unique<config::CommandConfig>(sub, kSections, false);
  return [args] {
    return config::RunWithConfig("ls", *args->cc, kSections, [&](const Config& config) {
      auto tls = ClientTls(config.tls);
      if (!tls.ok()) return ReportError("ls", "", tls.status());
      rpc::MasterClient master(client::MasterClientOptions(config.cluster, *tls));
      msg::ListKeysRequest req;
      req.prefix = args->prefix;
      req.limit = kPageKeys;
      bool first = true;
      if (args->json) std::fputs("[", stdout);
      do {
        auto page = Page(master, req);
        if (!page.ok()) return ReportError("ls", "", page.status());
        for (size_t i = 0; i < page->list.keys.size(); ++i) {
          const msg::KeyInfo& k = page->list.keys[i];
          const char* tier = TierName(i < page->tiers.size() ? page->tiers[i] : 0);
          if (args->json) {
            std::printf("%s{\"key\":\"%s\",\"size\":%llu,\"replicas\":%u,\"soft_pinned\":%s,"
                        "\"tier\":\"%s\"}",
                        first ? "" : ",", JsonEscape(k.key).c_str(),
                        static_cast<unsigned long long>(k.size_bytes), k.replicas,
                        k.soft_pinned ? "true" : "false", tier);
          } else if (args->long_format) {
            std::printf("%12llu %u %-6s %-6s %s\n", static_cast<unsigned long long>(k.size_bytes),
                        k.replicas, k.soft_pinned ? "pinned" : "-", tier, k.key.c_str());
          } else {
            std::printf("%s\n", k.key.c_str());
          }
          first = false;
        }
        req.cursor = page->list.next_cursor;
      } while (!req.cursor.empty());
      if (args->json) std::puts("]");
      return static_cast<int>(kExitOk);
    });
  };
}

}  // namespace mc::cli

// `mooncake client`: the standalone client of one host (mooncake-client(1)).
//
// Its settings are the store's and the client's (mooncake.toml(5)), with
// one difference from `mooncake store`: --port is the client's service port
// (the reference's 50052, which names the dummies' socket) and the
// segment's data port is --data-port. So the [store] settings are not bound
// as flags (the config would claim --port); the segment's size has its own
// flag here, the rest come from the file and the environment. The
// reference's mooncake_client flag names are accepted beside ours.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "clientd/clientd.h"
#include "common/units.h"
#include "config/command_config.h"
#include "config/ref_flags.h"

namespace mc::cli {

namespace {

// What the command line adds to the config tree.
struct ClientFlags {
  uint16_t port = clientd::kDefaultClientPort;
  std::string socket_path;
  std::string max_pool_size = "256gb";
  uint32_t max_dummies = clientd::kDefaultMaxDummies;
  uint32_t threads = 1;
  uint16_t data_port = 0;
  uint16_t http_port = 0;
  std::string segment_size;  // empty: [store] global_segment_size
  // The reference's spellings of settings that have ours.
  std::string host, master_server_address, device_names;
};

void AddFlags(CLI::App& sub, ClientFlags& f) {
  sub.add_option("--global-segment-size,--global_segment_size,--segment", f.segment_size,
                 "Memory this client contributes to the pool; 0: none (size: bytes or 512mb, "
                 "50gb); env MOONCAKE_GLOBAL_SEGMENT_SIZE; [store] global_segment_size")
      ->default_str("1gb")->type_name("SIZE");
  sub.add_option("--port", f.port,
                 "Service port; the dummies' socket is @mooncake_client_PORT.sock")
      ->default_str("50052")->type_name("PORT");
  sub.add_option("--data-port,--data_port", f.data_port,
                 "Data port transfers reach the segment on; 0: [store] port, else a free one")
      ->type_name("PORT");
  sub.add_option("--socket,--ipc-socket-path,--ipc_socket_path", f.socket_path,
                 "Unix socket dummy clients attach to ('@' prefix: abstract); default "
                 "@mooncake_client_PORT.sock")->type_name("PATH");
  sub.add_option("--max-pool-size,--max_pool_size", f.max_pool_size,
                 "All dummy clients' shared pools together (memfd, lazily backed)")
      ->default_str("256gb")->type_name("SIZE");
  sub.add_option("--max-dummies,--max_dummies", f.max_dummies,
                 "Dummy clients attached at once")
      ->default_str(std::to_string(clientd::kDefaultMaxDummies))
      ->check(CLI::Range(1u, clientd::kMaxDummies))->type_name("N");
  sub.add_option("--threads", f.threads,
                 "Accepted for the reference; each dummy is served on a thread of its own")
      ->default_str("1")->check(CLI::Range(1u, clientd::kMaxDummies))->type_name("N");
  sub.add_option("--http-port,--http_port", f.http_port,
                 "HTTP API port (/api/*, /health, /metrics, see mooncake-client(1)); "
                 "0: none")->type_name("PORT");
  // Hidden (empty group), as every alias: named in the footer instead.
  sub.add_option("--host", f.host, "= --local-hostname")->group("");
  sub.add_option("--master_server_address", f.master_server_address, "= --master")->group("");
  sub.add_option("--device_names", f.device_names, "= --device-name")->group("");
  sub.footer("The reference's mooncake_client names are accepted too: --host for "
             "--local-hostname, --master_server_address for --master, --device_names for "
             "--device-name (and the underscore spelling of every option); --tenant_id "
             "default, --enable_offload and --start_offload_rpc_server are accepted without "
             "effect (see mooncake-client(1)).");
}

// The config with the reference's spellings applied, and the process options.
Result<clientd::ClientdOptions> Apply(const ClientFlags& f, Config* config) {
  if (!f.host.empty()) config->cluster.local_hostname = f.host;
  if (!f.master_server_address.empty()) config->cluster.master = f.master_server_address;
  if (!f.device_names.empty()) config->cluster.device_name = f.device_names;
  clientd::ClientdOptions o;
  o.port = f.port;
  o.dummies.socket_path = f.socket_path;
  auto pool = ParseSize(f.max_pool_size);
  if (!pool.ok()) return Error(ErrorCode::INVALID_PARAMS, "--max-pool-size: " + pool.status().message());
  o.dummies.max_pool_bytes = *pool;
  if (!f.segment_size.empty()) {
    auto seg = ParseSize(f.segment_size);
    if (!seg.ok()) {
      return Error(ErrorCode::INVALID_PARAMS, "--global-segment-size: " + seg.status().message());
    }
    config->store.global_segment_size_bytes = *seg;
  }
  o.dummies.max_dummies = f.max_dummies;
  o.global_segment_size_bytes = config->store.global_segment_size_bytes;
  o.data_port = f.data_port != 0 ? f.data_port : config->store.port;
  o.threads = f.threads;
  o.http_port = f.http_port;
  return o;
}

}  // namespace

RunFn SetupClient(CLI::App& sub) {
  constexpr unsigned kFlagSections = config::kCluster | config::kClient | config::kLog | config::kTls;
  constexpr unsigned kSections = kFlagSections | config::kStore;
  auto cc = std::make_shared<config::CommandConfig>(sub, kFlagSections, /*is_server=*/true,
                                                    config::RefClientFlags());
  auto flags = std::make_shared<ClientFlags>();
  AddFlags(sub, *flags);
  return [cc, flags] {
    return config::RunWithConfig("client", *cc, kSections, [&](const Config& resolved) {
      Config config = resolved;
      auto options = Apply(*flags, &config);
      if (!options.ok()) {
        std::fprintf(stderr, "mooncake client: error: %s\n", options.status().message().c_str());
        return static_cast<int>(kExitUsage);
      }
      Status st = clientd::RunClientd(config, *options);
      if (st.ok()) return static_cast<int>(kExitOk);
      std::fprintf(stderr, "mooncake client: %s\n", st.ToString().c_str());
      if (st.code() == ErrorCode::INVALID_PARAMS) return static_cast<int>(kExitUsage);
      if (st.code() == ErrorCode::AUTH_FAILED) return static_cast<int>(kExitAuth);
      return static_cast<int>(st.code() == ErrorCode::RPC_FAIL ? kExitUnavailable : kExitFailure);
    });
  };
}

}  // namespace mc::cli

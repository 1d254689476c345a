// Binding the config tree to a subcommand's command line.
//
// A CommandConfig adds to one CLI11 subcommand: --config FILE, --print-config
// (server subcommands), and one flag per setting of the sections that command
// uses (e.g. `--rpc-port` with the reference's `--rpc_port` as an alias).
// After CLI11 has parsed, Resolve() builds the effective Config from
// defaults < TOML file < mooncake.json (MOONCAKE_CONFIG_PATH) < environment <
// flags, validating every value. Not thread-safe; used once at startup.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "config/config.h"
#include "config/sections.h"

namespace CLI {
class App;
}

namespace mc::config {

struct RefFlag;

class CommandConfig {
 public:
  // `is_server` adds --print-config. The object must outlive parsing.
  // `ref_flags`: the reference's flags this command also takes (ref_flags.h).
  CommandConfig(CLI::App& sub, unsigned sections, bool is_server,
                std::span<const RefFlag> ref_flags = {});
  ~CommandConfig();

  // The effective config. Errors name the file and line, the variable or the
  // flag, and the reason (code INVALID_PARAMS).
  Result<Config> Resolve() const;

  bool print_config_requested() const;

  // After Resolve: what the reference master's flags accepted without effect
  // (ref_flags.h), one line each, for the start-up log.
  const std::vector<std::string>& notes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The config as TOML, sizes in bytes and durations as "10s"-style strings,
// limited to `sections`.
std::string ToToml(const Config& config, unsigned sections);

// Runs a subcommand body with the resolved config: on a config error prints
// "mooncake NAME: error: <message>" and returns 2; with --print-config prints
// ToToml and returns 0; otherwise returns body(config).
int RunWithConfig(const char* name, const CommandConfig& cc, unsigned sections,
                  const std::function<int(const Config&)>& body);

}  // namespace mc::config

// Filling a Config from its sources: a TOML file, a reference-style
// mooncake.json, the environment and command-line flag values, in that order
// (each overrides the one before), all driven by the setting registry.
// Every error names its source (file:line, variable, flag) and the reason,
// with code INVALID_PARAMS. The environment is injected so tests need not
// touch the process's own. Functions are thread-safe given their arguments.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "config/config.h"
#include "config/registry.h"

namespace mc::config {

// A config file larger than this is refused rather than read.
constexpr size_t kMaxConfigFileBytes = 1 << 20;

// Applies a TOML document. `source` names it in messages ("mooncake.toml").
// Every section and key must be known; types are checked.
Status ApplyToml(std::string_view text, const std::string& source, Config& config);

// Applies a reference mooncake.json: the keys with a json_key in the
// registry; other keys are ignored (the reference file carries more).
Status ApplyJson(std::string_view text, const std::string& source, Config& config);

// Returns a variable's value or nullptr, like getenv.
using GetEnvFn = std::function<const char*(const char*)>;

// Applies every registry env variable that is set and not empty.
Status ApplyEnv(const GetEnvFn& getenv, Config& config);

// One value given on the command line, under the flag name the user typed.
struct FlagValue {
  const Setting* setting;
  std::string flag;  // "--segment"
  std::string value;
};

struct Sources {
  std::string toml_path;  // --config FILE; empty: none
  GetEnvFn getenv;        // also supplies MOONCAKE_CONFIG_PATH
  std::vector<FlagValue> flags;  // in command-line order; the last wins
  // The reference master's --config_path JSON (ref_flags.h), applied after
  // the TOML file; its notes go to `notes`.
  std::string ref_master_json;
  std::vector<std::string>* notes = nullptr;
};

// defaults < TOML file < reference master JSON < mooncake.json < environment
// < flags.
Result<Config> LoadConfig(const Sources& sources);

// The whole file, or an error naming it.
Result<std::string> ReadConfigFile(const std::string& path);

}  // namespace mc::config

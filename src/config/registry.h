// The setting registry: one row per configurable value of the Config tree.
//
// It is the single source of truth that the TOML loader, the mooncake.json
// reader, the environment, the command-line flags, ToToml, the reference file
// (packaging/mooncake.toml) test and the man page test all walk. Adding a
// setting means adding a member to config.h and one row in registry.cc.
// The table is immutable; every function here is thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/ceilings.h"
#include "common/result.h"
#include "common/units.h"
#include "config/config.h"
#include "config/sections.h"

namespace mc::config {

enum class Type {
  kString,
  kBool,
  kPort,      // uint16_t, 0..65535 (0 only when Setting::zero_ok)
  kU32,       // uint32_t count
  kSize32,    // uint32_t byte count, written as a size ("4k")
  kSize,      // uint64_t byte count, written as a size ("50gb")
  kDuration,  // uint64_t microseconds, plain numbers in Setting::plain_unit
  kRatio,     // double in 0..1
};

struct Setting {
  unsigned section;         // one Section bit (command_config.h)
  const char* key;          // TOML key, e.g. "global_segment_size"
  Type type;
  void* (*field)(Config&);  // where the value lives in the tree
  const char* help;         // one line, no default, no unit
  const char* env = nullptr;        // environment variable, if any
  // The reference's name for the same variable, read when `env` is unset.
  const char* env_alias = nullptr;
  const char* json_key = nullptr;   // key in a reference mooncake.json
  const char* flags = nullptr;      // extra flag names, comma separated ("--segment")
  const char* flag = nullptr;       // main flag when not --<key> ("--log-level")
  const char* choices = nullptr;    // allowed strings, '|' separated ("tcp|rdma")
  DurationUnit plain_unit = DurationUnit::kMicroseconds;
  bool zero_ok = true;      // ports: 0 picks one; counts: 0 is meaningful
  // Counts and sizes: the ceiling a later layer relies on (common/ceilings.h);
  // a value above it is refused, naming the setting, the value and the
  // ceiling, never clamped. 0: only the type's own range.
  uint64_t max = 0;
};

// Every setting, in the order of the reference file.
std::span<const Setting> AllSettings();

// "master", "metadata_server", ...; section is one Section bit.
const char* SectionName(unsigned section);

// nullptr when the section or the key is unknown.
const Setting* FindSetting(std::string_view section, std::string_view key);

// Whether `item` is one of the `sep`-separated words of `list` (a row's
// choices "tcp|rdma", its extra flags "--segment,--x").
bool ListHas(std::string_view list, char sep, std::string_view item);

// "[master] eviction_ratio" — how messages name a setting.
std::string SettingName(const Setting& s);

// Parses `text` as the setting's type and stores it. Errors give the reason
// ("'12xb': unknown size suffix ...", or for a value above Setting::max
// "[master] max_batch = 70000 is above its ceiling 65536"); callers prefix
// the source.
Status SetFromText(const Setting& s, std::string_view text, Config& config);

// The value as a TOML literal: sizes in bytes, durations as "10s", strings
// quoted. SetFromText accepts it back.
std::string FormatValue(const Setting& s, const Config& config);

// The default as a user would write it ("1gb", "10s", "0.9") for help texts.
std::string DefaultText(const Setting& s);

// "(size)", "(ms)", "(0..1)" ... shown after the help text of a flag.
std::string UnitText(const Setting& s);

}  // namespace mc::config

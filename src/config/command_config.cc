#include "config/command_config.h"

#include <CLI/CLI.hpp>

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <set>

#include "common/log.h"
#include "config/ref_flags.h"
#include "config/registry.h"
#include "config/sources.h"

namespace mc::config {

namespace {

// One flag name bound to a setting. Aliases are separate (hidden) options so
// that an error can name the spelling the user typed.
struct Bound {
  const Setting* setting;
  std::string name;     // "--segment"
  bool negate = false;  // "--no-shm"
  std::string text;     // value options store here
};

std::string Hyphenate(std::string_view key) {
  std::string out(key);
  for (char& c : out) c = c == '_' ? '-' : c;
  return out;
}

const char* TypeName(const Setting& s) {
  switch (s.type) {
    case Type::kString: return s.choices != nullptr ? "CHOICE" : "TEXT";
    case Type::kBool: return "";
    case Type::kPort: return "PORT";
    case Type::kU32: return "N";
    case Type::kSize32:
    case Type::kSize: return "SIZE";
    case Type::kDuration: return "DURATION";
    case Type::kRatio: return "RATIO";
  }
  return "";
}

// All names of a setting, the main one first.
std::vector<std::string> FlagNames(const Setting& s) {
  std::vector<std::string> names;
  names.push_back(s.flag != nullptr ? std::string(s.flag) : "--" + Hyphenate(s.key));
  std::string underscore = std::string("--") + s.key;
  if (s.flag == nullptr && underscore != names[0]) names.push_back(underscore);
  if (s.flags != nullptr) {
    std::string_view rest = s.flags;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      names.emplace_back(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  return names;
}

bool HasNegation(const Setting& s) {
  return s.type == Type::kBool && std::string_view(s.key).rfind("enable_", 0) != 0;
}

// "--no-shm"; "--no-tls-verify-peer" for a row with its own main flag.
std::string NegationName(const Setting& s) {
  if (s.flag != nullptr) return "--no-" + std::string(s.flag).substr(2);
  return "--no-" + Hyphenate(s.key);
}

std::string HelpText(const Setting& s, const std::vector<std::string>& names) {
  std::string help = s.help;
  std::string unit = UnitText(s);
  if (!unit.empty()) help += " " + unit;
  if (names.size() > 1 || HasNegation(s)) {
    help += "; also";
    for (size_t i = 1; i < names.size(); ++i) help += " " + names[i];
    if (HasNegation(s)) help += " " + NegationName(s);
  }
  if (s.env != nullptr) help += "; env " + std::string(s.env);
  if (s.env_alias != nullptr) help += " or " + std::string(s.env_alias);
  help += std::string("; [") + SectionName(s.section) + "] " + s.key;
  return help;
}

std::string BoolText(std::string text, bool negate) {
  if (!negate) return text;
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (text == "true" || text == "1" || text == "yes" || text == "on") return "false";
  if (text == "false" || text == "0" || text == "no" || text == "off") return "true";
  return text;  // SetFromText names it as not a boolean
}

}  // namespace

struct CommandConfig::Impl {
  CLI::App* sub = nullptr;
  std::string config_path;
  bool print_config = false;
  std::deque<Bound> bound;  // deque: CLI11 keeps pointers into it
  std::map<const CLI::Option*, Bound*> by_option;
  std::set<std::string> names;
  // The reference's flags of this command without a setting (ref_flags.h).
  std::vector<std::pair<CLI::Option*, const RefFlag*>> ref_options;
  std::deque<std::string> ref_text;
  std::string ref_config_path;  // --config_path: the reference's JSON file
  std::vector<std::string> notes;

  void AddRef(const RefFlag& f) {
    std::string name = std::string("--") + f.name;
    if (names.count(name) != 0) return;  // a setting of ours has the name
    Claim(name);
    static const std::string kNoHelp;  // hidden: mooncake-master(1) lists them
    CLI::Option* opt = nullptr;
    if (std::string_view(f.name) == "config_path") {
      opt = sub->add_option(name, ref_config_path, kNoHelp);
    } else if (f.type == RefType::kBool) {
      opt = sub->add_flag(name, kNoHelp);
    } else {
      opt = sub->add_option(name, ref_text.emplace_back(), kNoHelp)
                ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
    opt->group("");
    ref_options.emplace_back(opt, &f);
  }

  void Claim(const std::string& name) {
    bool fresh = names.insert(name).second;
    assert(fresh && "two settings of one command share a flag name");
    (void)fresh;
  }

  void AddOne(const Setting& s, const std::string& name, bool visible, bool negate,
              const std::string& help) {
    Claim(name);
    Bound& b = bound.emplace_back(Bound{&s, name, negate, {}});
    CLI::Option* opt = nullptr;
    if (s.type == Type::kBool) {
      opt = sub->add_flag(name, help);
    } else {
      opt = sub->add_option(name, b.text, help)
                ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
                ->type_name(TypeName(s));
    }
    if (visible) {
      opt->default_str(DefaultText(s));
    } else {
      opt->group("");  // hidden: listed in the main flag's help instead
    }
    by_option[opt] = &b;
  }

  void Add(const Setting& s) {
    std::vector<std::string> names_of = FlagNames(s);
    std::string help = HelpText(s, names_of);
    for (size_t i = 0; i < names_of.size(); ++i) {
      AddOne(s, names_of[i], i == 0, false, i == 0 ? help : "alias of " + names_of[0]);
    }
    if (HasNegation(s)) AddOne(s, NegationName(s), false, true, "");
  }
};

CommandConfig::CommandConfig(CLI::App& sub, unsigned sections, bool is_server,
                             std::span<const RefFlag> ref_flags)
    : impl_(std::make_unique<Impl>()) {
  impl_->sub = &sub;
  impl_->Claim("--config");
  sub.add_option("--config", impl_->config_path,
                 "TOML config file (see mooncake.toml(5)); precedence: defaults < this file "
                 "< $MOONCAKE_CONFIG_PATH json < environment < flags")
      ->type_name("FILE");
  if (is_server) {
    impl_->Claim("--print-config");
    sub.add_flag("--print-config", impl_->print_config,
                 "Print the effective config as TOML and exit");
  }
  for (const Setting& s : AllSettings()) {
    if ((sections & s.section) != 0) impl_->Add(s);
  }
  for (const RefFlag& f : ref_flags) impl_->AddRef(f);
}

CommandConfig::~CommandConfig() = default;

bool CommandConfig::print_config_requested() const { return impl_->print_config; }

Result<Config> CommandConfig::Resolve() const {
  Sources sources;
  sources.toml_path = impl_->config_path;
  sources.getenv = [](const char* name) -> const char* { return std::getenv(name); };
  for (const CLI::Option* opt : impl_->sub->parse_order()) {
    auto it = impl_->by_option.find(opt);
    if (it == impl_->by_option.end() || opt->results().empty()) continue;
    const Bound& b = *it->second;
    std::string value = opt->results().back();
    if (b.setting->type == Type::kBool) value = BoolText(value, b.negate);
    sources.flags.push_back(FlagValue{b.setting, b.name, value});
  }
  impl_->notes.clear();
  if (!impl_->ref_config_path.empty()) {
    sources.ref_master_json = impl_->ref_config_path;
    sources.notes = &impl_->notes;
  }
  MC_ASSIGN_OR_RETURN(Config config, LoadConfig(sources));
  for (const CLI::Option* opt : impl_->sub->parse_order()) {
    for (const auto& [ref_opt, flag] : impl_->ref_options) {
      if (ref_opt != opt || opt->results().empty()) continue;
      if (flag->name == std::string_view("config_path")) continue;  // read above
      std::string value = opt->results().back();
      if (flag->type == RefType::kBool) value = BoolText(value, false);
      MC_RETURN_IF_ERROR(
          ApplyRefFlag(*flag, value, std::string("--") + flag->name, config, impl_->notes));
    }
  }
  return config;
}

const std::vector<std::string>& CommandConfig::notes() const { return impl_->notes; }

int RunWithConfig(const char* name, const CommandConfig& cc, unsigned sections,
                  const std::function<int(const Config&)>& body) {
  Result<Config> config = cc.Resolve();
  if (!config.ok()) {
    std::fprintf(stderr, "mooncake %s: error: %s\n", name, config.status().message().c_str());
    return 2;
  }
  LogLevel level;
  if (ParseLogLevel(config->log.level, &level)) SetLogLevel(level);
  for (const std::string& note : cc.notes()) MC_LOG(INFO) << note;
  if (cc.print_config_requested()) {
    std::fputs(ToToml(*config, sections).c_str(), stdout);
    return 0;
  }
  return body(*config);
}

}  // namespace mc::config

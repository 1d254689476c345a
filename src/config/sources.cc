#include "config/sources.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "config/command_config.h"
#include "config/json_reader.h"
#include "config/ref_flags.h"

namespace mc::config {

namespace {

Status Named(const std::string& source, const std::string& what) {
  return Error(ErrorCode::INVALID_PARAMS, source + ": " + what);
}

// A mooncake.json value as text for SetFromText: strings as they are,
// numbers as written (sizes may be either), booleans as true/false.
Result<std::string> JsonText(const Setting& s, const JsonValue& v) {
  using K = JsonValue::Kind;
  bool number_ok = s.type != Type::kString && s.type != Type::kBool;
  bool string_ok = s.type == Type::kString || s.type == Type::kSize ||
                   s.type == Type::kSize32 || s.type == Type::kDuration;
  if (v.kind == K::kString && string_ok) return v.text;
  if (v.kind == K::kNumber && number_ok) return v.text;
  if (v.kind == K::kBool && s.type == Type::kBool) return std::string(v.boolean ? "true" : "false");
  return Error(ErrorCode::INVALID_PARAMS, s.type == Type::kString ? "expected a string"
                                                                   : "expected a number or string");
}

}  // namespace

Result<std::string> ReadConfigFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Named(path, std::string("cannot read: ") + std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return Named(path, "read failed");
  std::string text = buf.str();
  if (text.size() > kMaxConfigFileBytes) {
    return Named(path, "larger than " + std::to_string(kMaxConfigFileBytes) + " bytes");
  }
  return text;
}

Status ApplyJson(std::string_view text, const std::string& source, Config& config) {
  auto doc = ParseJson(text);
  if (!doc.ok()) return Named(source, doc.status().message());
  if (doc->kind != JsonValue::Kind::kObject) return Named(source, "expected a JSON object");
  for (const Setting& s : AllSettings()) {
    if (s.json_key == nullptr) continue;
    auto it = doc->members.find(s.json_key);
    if (it == doc->members.end() || it->second.kind == JsonValue::Kind::kNull) continue;
    auto value = JsonText(s, it->second);
    if (!value.ok()) return Named(source, std::string(s.json_key) + ": " + value.status().message());
    Status st = SetFromText(s, *value, config);
    if (!st.ok()) return Named(source, std::string(s.json_key) + ": " + st.message());
  }
  return Status::Ok();
}

Status ApplyEnv(const GetEnvFn& getenv, Config& config) {
  for (const Setting& s : AllSettings()) {
    if (s.env == nullptr) continue;
    const char* name = s.env;
    const char* value = getenv(name);
    if ((value == nullptr || value[0] == '\0') && s.env_alias != nullptr) {
      name = s.env_alias;
      value = getenv(name);
    }
    if (value == nullptr || value[0] == '\0') continue;
    Status st = SetFromText(s, value, config);
    if (!st.ok()) return Named(name, st.message());
  }
  return Status::Ok();
}

Result<Config> LoadConfig(const Sources& sources) {
  Config config;
  if (!sources.toml_path.empty()) {
    MC_ASSIGN_OR_RETURN(std::string text, ReadConfigFile(sources.toml_path));
    MC_RETURN_IF_ERROR(ApplyToml(text, sources.toml_path, config));
  }
  if (!sources.ref_master_json.empty()) {
    MC_ASSIGN_OR_RETURN(std::string text, ReadConfigFile(sources.ref_master_json));
    std::vector<std::string> ignored;
    MC_RETURN_IF_ERROR(ApplyRefMasterJson(text, sources.ref_master_json, config,
                                          sources.notes != nullptr ? *sources.notes : ignored));
  }
  if (sources.getenv) {
    const char* json_path = sources.getenv("MOONCAKE_CONFIG_PATH");
    if (json_path != nullptr && json_path[0] != '\0') {
      auto text = ReadConfigFile(json_path);
      if (!text.ok()) return Named("MOONCAKE_CONFIG_PATH", text.status().message());
      MC_RETURN_IF_ERROR(ApplyJson(*text, json_path, config));
    }
    MC_RETURN_IF_ERROR(ApplyEnv(sources.getenv, config));
  }
  for (const FlagValue& f : sources.flags) {
    Status st = SetFromText(*f.setting, f.value, config);
    if (!st.ok()) return Named(f.flag, st.message());
  }
  return config;
}

std::string ToToml(const Config& config, unsigned sections) {
  std::string out;
  for (unsigned bit = 1; bit <= kLastSection; bit <<= 1) {
    if ((sections & bit) == 0) continue;
    if (!out.empty()) out += "\n";
    out += std::string("[") + SectionName(bit) + "]\n";
    for (const Setting& s : AllSettings()) {
      if (s.section != bit) continue;
      out += std::string(s.key) + " = " + FormatValue(s, config) + "\n";
    }
  }
  return out;
}

}  // namespace mc::config

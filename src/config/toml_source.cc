// The TOML source. The only file that includes toml++ (header-only mode: the
// distribution ships no static library, and the binary is static).
#include <charconv>
#include <toml++/toml.h>

#include "config/sources.h"

namespace mc::config {

namespace {

Status At(const std::string& source, const toml::source_region& where, const std::string& what) {
  return Error(ErrorCode::INVALID_PARAMS,
               source + ":" + std::to_string(where.begin.line) + ": " + what);
}

const char* TypeName(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a number with a fraction";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    default: return "a date or time";
  }
}

const char* Expected(Type t) {
  switch (t) {
    case Type::kString: return "a string";
    case Type::kBool: return "true or false";
    case Type::kPort: return "an integer port";
    case Type::kU32: return "an integer";
    case Type::kSize32:
    case Type::kSize: return "a size (integer bytes or a string like \"50gb\")";
    case Type::kDuration: return "a duration (an integer or a string like \"10s\")";
    case Type::kRatio: return "a number in 0..1";
  }
  return "?";
}

// The node as text SetFromText parses, or nullopt when its TOML type does not
// fit the setting (a string for a port, an integer for a string, ...).
std::optional<std::string> NodeText(const Setting& s, const toml::node& n) {
  bool text_ok = s.type == Type::kString || s.type == Type::kSize ||
                 s.type == Type::kSize32 || s.type == Type::kDuration;
  bool int_ok = s.type != Type::kString && s.type != Type::kBool;
  if (auto v = n.as_string(); v && text_ok) return v->get();
  if (auto v = n.as_boolean(); v && s.type == Type::kBool) return v->get() ? "true" : "false";
  if (auto v = n.as_integer(); v && int_ok) return std::to_string(v->get());
  if (auto v = n.as_floating_point(); v && s.type == Type::kRatio) {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v->get());
    return std::string(buf, end);
  }
  return std::nullopt;
}

Status ApplySection(const toml::table& section, const std::string& section_name,
                    const std::string& source, Config& config) {
  for (auto&& [key, node] : section) {
    const Setting* s = FindSetting(section_name, key.str());
    std::string name = "[" + section_name + "] " + std::string(key.str());
    if (s == nullptr) return At(source, key.source(), name + ": unknown key");
    std::optional<std::string> text = NodeText(*s, node);
    if (!text) {
      return At(source, node.source(),
                name + ": expected " + Expected(s->type) + ", got " + TypeName(node));
    }
    Status st = SetFromText(*s, *text, config);
    if (!st.ok()) return At(source, node.source(), name + ": " + st.message());
  }
  return Status::Ok();
}

}  // namespace

Status ApplyToml(std::string_view text, const std::string& source, Config& config) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return At(source, e.source(), std::string(e.description()));
  }
  for (auto&& [name, node] : root) {
    std::string section(name.str());
    const toml::table* table = node.as_table();
    if (table == nullptr) {
      return At(source, name.source(),
                "'" + section + "' is outside any section; keys belong in [cluster], [master], "
                "[store], [client], [metadata_server], [log] or [tls]");
    }
    bool known = false;
    for (unsigned bit = 1; bit <= kLastSection; bit <<= 1) known = known || section == SectionName(bit);
    if (!known) return At(source, name.source(), "unknown section [" + section + "]");
    MC_RETURN_IF_ERROR(ApplySection(*table, section, source, config));
  }
  return Status::Ok();
}

}  // namespace mc::config

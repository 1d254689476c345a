#include "config/registry.h"

#include <doctest/doctest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "config/command_config.h"
#include "config/sources.h"

using namespace mc::config;
using mc::Config;

namespace {

std::string ReadSourceFile(const std::string& relative) {
  std::ifstream in(std::string(MC_SOURCE_ROOT) + "/" + relative);
  REQUIRE_MESSAGE(in.good(), "cannot read " << relative);
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

}  // namespace

TEST_CASE("every setting has a unique section and key, help and a known section") {
  std::set<std::string> seen;
  for (const Setting& s : AllSettings()) {
    CHECK(seen.insert(SettingName(s)).second);
    CHECK(std::string(s.help).size() > 5);
    CHECK(FindSetting(SectionName(s.section), s.key) == &s);
    CHECK(std::string(s.key).find('-') == std::string::npos);
  }
  CHECK(FindSetting("master", "nope") == nullptr);
  CHECK(FindSetting("nope", "rpc_port") == nullptr);
}

TEST_CASE("every setting's default is accepted back by its own parser") {
  const Config defaults;
  for (const Setting& s : AllSettings()) {
    Config c;
    std::string text = DefaultText(s);
    mc::Status st = SetFromText(s, text, c);
    CHECK_MESSAGE(st.ok(), SettingName(s) << ": " << st.message());
    CHECK_MESSAGE(FormatValue(s, c) == FormatValue(s, defaults), SettingName(s));
    bool unit_ok = !UnitText(s).empty() || s.type == Type::kString;
    CHECK(unit_ok);
  }
}

TEST_CASE("the reference file loads and sets exactly the defaults") {
  std::string text = ReadSourceFile("packaging/mooncake.toml");
  Config c;
  c.master.rpc_port = 1;  // must be overwritten by the file
  mc::Status st = ApplyToml(text, "packaging/mooncake.toml", c);
  REQUIRE_MESSAGE(st.ok(), st.message());
  CHECK(ToToml(c, kAllSections) == ToToml(Config(), kAllSections));
}

TEST_CASE("the reference file mentions every setting in its section") {
  std::string text = ReadSourceFile("packaging/mooncake.toml");
  for (const Setting& s : AllSettings()) {
    std::string header = std::string("\n[") + SectionName(s.section) + "]\n";
    size_t start = text.find(header);
    REQUIRE_MESSAGE(start != std::string::npos, header);
    size_t end = text.find("\n[", start + 1);
    std::string body = text.substr(start, end - start);
    CHECK_MESSAGE(body.find(std::string("\n") + s.key + " = ") != std::string::npos,
                  SettingName(s) << " is missing from packaging/mooncake.toml");
    if (s.env != nullptr) {
      CHECK_MESSAGE(body.find(s.env) != std::string::npos, s.env << " not documented");
    }
    if (s.env_alias != nullptr) {
      CHECK_MESSAGE(body.find(s.env_alias) != std::string::npos, s.env_alias << " not documented");
    }
  }
}

TEST_CASE("ports, counts and ratios are range checked") {
  Config c;
  const Setting* port = FindSetting("master", "rpc_port");
  CHECK(SetFromText(*port, "65535", c).ok());
  CHECK_FALSE(SetFromText(*port, "65536", c).ok());
  CHECK_FALSE(SetFromText(*port, "0", c).ok());
  CHECK_FALSE(SetFromText(*port, "80x", c).ok());
  CHECK_FALSE(SetFromText(*port, "99999999999999999999999", c).ok());
  const Setting* store_port = FindSetting("store", "port");
  CHECK(SetFromText(*store_port, "0", c).ok());  // 0 picks a free port
  const Setting* ratio = FindSetting("master", "eviction_ratio");
  CHECK(SetFromText(*ratio, "0", c).ok());
  CHECK(SetFromText(*ratio, "1", c).ok());
  CHECK_FALSE(SetFromText(*ratio, "1.01", c).ok());
  CHECK_FALSE(SetFromText(*ratio, "nan", c).ok());
  CHECK_FALSE(SetFromText(*ratio, "", c).ok());
  const Setting* key = FindSetting("master", "max_key_size");
  CHECK_FALSE(SetFromText(*key, "5gb", c).ok());  // does not fit its 32-bit field
  const Setting* shm = FindSetting("cluster", "shm");
  CHECK(SetFromText(*shm, "off", c).ok());
  CHECK_FALSE(c.cluster.shm);
}

TEST_CASE("a setting above its ceiling is refused naming the setting, the value and the ceiling") {
  struct Case {
    const char* section;
    const char* key;
    uint64_t ceiling;
  };
  const Case cases[] = {{"master", "max_batch", mc::kMaxBatchItems},
                        {"master", "max_key_size", mc::kMaxStringBytes},
                        {"client", "replicas", mc::kMaxReplicas},
                        {"client", "tcp_streams", mc::kMaxTcpStreams}};
  for (const Case& k : cases) {
    CAPTURE(k.key);
    Config c;
    const Setting* s = FindSetting(k.section, k.key);
    REQUIRE(s != nullptr);
    CHECK(s->max == k.ceiling);
    CHECK(SetFromText(*s, std::to_string(k.ceiling), c).ok());  // the ceiling itself is allowed
    const std::string before = FormatValue(*s, c);
    mc::Status st = SetFromText(*s, std::to_string(k.ceiling + 1), c);
    REQUIRE_FALSE(st.ok());
    CHECK(st.message() == SettingName(*s) + " = " + std::to_string(k.ceiling + 1) +
                              " is above its ceiling " + std::to_string(k.ceiling));
    CHECK(FormatValue(*s, c) == before);  // refused, not clamped
  }
}

// Found by tests/fuzz/config_json_fuzz: a Latin-1 byte in a mooncake.json
// string was accepted, and --print-config then printed TOML that would not
// load ("invalid utf-8 sequence").
TEST_CASE("a string setting that is not UTF-8 is refused and every accepted one prints back") {
  const Setting* host = FindSetting("cluster", "local_hostname");
  REQUIRE(host != nullptr);
  Config c;
  for (std::string bad : {"\xf3" "27.0.0.1", "a\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                          "\xe0\x80\xaf"}) {
    mc::Status st = SetFromText(*host, bad, c);
    CHECK_MESSAGE(!st.ok(), "accepted " << bad);
    CHECK(st.message().find("not valid UTF-8") != std::string::npos);
  }
  for (std::string good : {"h\xc3\xb4te", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "tab\there", ""}) {
    REQUIRE(SetFromText(*host, good, c).ok());
    Config back;
    mc::Status st = ApplyToml(ToToml(c, kAllSections), "printed", back);
    REQUIRE_MESSAGE(st.ok(), st.message());
    CHECK(back.cluster.local_hostname == good);
  }
  CHECK(!ApplyJson("{\"local_hostname\": \"\xf3\"}", "m.json", c).ok());
}

// Found by tests/fuzz/config_json_fuzz: a size above 2^63 - 1 was accepted
// and printed as a TOML integer, which TOML cannot hold.
TEST_CASE("a size above the TOML integer range prints as a string that loads back") {
  const Setting* size = FindSetting("client", "local_buffer_size");
  REQUIRE(size != nullptr);
  Config c;
  REQUIRE(SetFromText(*size, "18339220632606081004b", c).ok());
  Config back;
  mc::Status st = ApplyToml(ToToml(c, kAllSections), "printed", back);
  REQUIRE_MESSAGE(st.ok(), st.message());
  CHECK(back.client.local_buffer_size_bytes == 18339220632606081004ull);
}

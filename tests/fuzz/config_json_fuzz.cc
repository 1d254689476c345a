// libFuzzer target for the reference mooncake.json reader
// (config/json_reader.cc) and its application to the config tree
// (config::ApplyJson). Any input must be parsed or refused with
// INVALID_PARAMS; an accepted config must survive ToToml -> ApplyToml
// unchanged. Run: tests/fuzz/run_fuzz.sh config_json_fuzz.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/log.h"
#include "config/command_config.h"
#include "config/json_reader.h"
#include "config/sources.h"

using namespace mc;

namespace {

// Walks the tree: kinds and contents must be coherent.
void Walk(const config::JsonValue& v, int depth) {
  using K = config::JsonValue::Kind;
  if (depth > config::kMaxJsonDepth + 1) std::abort();
  if (v.kind != K::kArray && !v.items.empty()) std::abort();
  if (v.kind != K::kObject && !v.members.empty()) std::abort();
  if (v.kind == K::kNumber && v.text.empty()) std::abort();
  for (const auto& item : v.items) Walk(item, depth + 1);
  for (const auto& [key, member] : v.members) Walk(member, depth + 1);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  SetLogLevel(LogLevel::ERROR);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto doc = config::ParseJson(text);
  if (doc.ok()) {
    Walk(*doc, 0);
  } else if (doc.status().code() != ErrorCode::INVALID_PARAMS) {
    std::abort();
  }
  Config config;
  Status st = config::ApplyJson(text, "fuzz.json", config);
  if (!st.ok()) {
    if (st.code() != ErrorCode::INVALID_PARAMS) std::abort();
    return 0;
  }
  if (!doc.ok()) std::abort();  // applied a document the reader refused
  const std::string printed = config::ToToml(config, config::kAllSections);
  Config again;
  Status back = config::ApplyToml(printed, "printed.toml", again);
  if (!back.ok()) {
    std::fprintf(stderr, "printed config does not load: %s\n%s\n", back.ToString().c_str(),
                 printed.c_str());
    std::abort();
  }
  if (config::ToToml(again, config::kAllSections) != printed) {
    std::fprintf(stderr, "printed config loads as a different config:\n%s\n", printed.c_str());
    std::abort();
  }
  return 0;
}

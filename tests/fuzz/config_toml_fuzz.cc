// libFuzzer target for the TOML config source (config/toml_source.cc over
// toml++ and the setting registry). Any input must be applied or refused
// with INVALID_PARAMS naming the source; an accepted config must survive
// ToToml -> ApplyToml unchanged (what `--print-config` prints loads back as
// the same config). Run: tests/fuzz/run_fuzz.sh config_toml_fuzz.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/log.h"
#include "config/command_config.h"
#include "config/sources.h"

using namespace mc;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  SetLogLevel(LogLevel::ERROR);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Config config;
  Status st = config::ApplyToml(text, "fuzz.toml", config);
  if (!st.ok()) {
    if (st.code() != ErrorCode::INVALID_PARAMS) std::abort();
    if (st.message().rfind("fuzz.toml:", 0) != 0) std::abort();
    return 0;
  }
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

// libFuzzer target for the client HTTP API (rest/rest_server.h): the raw
// request bytes go through cpp-httplib's request parser into the routes,
// guards and handlers RestRoutes::Install sets up (the same ones
// RestServer::Start serves), over an in-memory stream and an in-memory
// backend: no socket is opened. The first input byte picks the setup (bit
// 0: an auth token is set; bit 1: a 64-byte body limit); the rest is one
// connection's bytes, up to kMaxRequests keep-alive requests. Checked,
// besides ASan/UBSan:
//   - no request gets a 500 (the backend is a map: nothing may fail);
//   - with a token set, the map never changes (nobody here has it);
//   - no stored value is longer than the body limit, and no key is empty.
// Run: tests/fuzz/run_fuzz.sh rest_http_fuzz.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "common/log.h"
#include "http_fuzz_stream.h"
#include "rest/rest_server.h"

using namespace mc;

namespace {

const char* const kToken = "fuzz-secret-token-2b7e151628aed2a6";
constexpr uint64_t kSmallBodyBytes = 64;

class MapBackend : public rest::RestBackend {
 public:
  Status Put(const std::string& key, std::span<const uint8_t> value) override {
    map[key] = std::string(value.begin(), value.end());
    return Status::Ok();
  }
  Result<std::string> Get(const std::string& key) override {
    auto it = map.find(key);
    if (it == map.end()) return Error(ErrorCode::OBJECT_NOT_FOUND, "absent");
    return it->second;
  }
  Result<bool> Exists(const std::string& key) override { return map.count(key) > 0; }
  Status Remove(const std::string& key) override {
    if (map.erase(key) == 0) return Error(ErrorCode::OBJECT_NOT_FOUND, "absent");
    return Status::Ok();
  }
  Result<int64_t> RemoveAll() override {
    const auto n = static_cast<int64_t>(map.size());
    map.clear();
    return n;
  }
  Status Health() override { return Status::Ok(); }
  std::string MetricsText() override { return ""; }
  std::string SummaryText() override { return "fuzz\n"; }
  std::map<std::string, std::string> map;
};

// One server per setup, reused across inputs (building the routes compiles
// their regexes); the map is reset to one seed key before each input.
struct Setup {
  rest::RestOptions options;
  MapBackend backend;
  std::unique_ptr<rest::RestRoutes> routes;
  FuzzServer http;
};

Setup& SetupFor(uint8_t mode) {
  static std::unique_ptr<Setup> setups[4];
  std::unique_ptr<Setup>& s = setups[mode & 3];
  if (s == nullptr) {
    s = std::make_unique<Setup>();
    if (mode & 1) s->options.auth_token = kToken;
    if (mode & 2) s->options.max_body_bytes = kSmallBodyBytes;
    s->routes = std::make_unique<rest::RestRoutes>(s->backend, s->options);
    s->routes->Install(s->http);
  }
  return *s;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  SetLogLevel(LogLevel::ERROR);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  Setup& setup = SetupFor(mode);
  auto& map = setup.backend.map;
  map.clear();
  map["seed"] = "seed value";
  const auto before = map;
  FuzzStream stream(data + 1, size - 1);
  setup.http.Serve(stream);
  if (AnyStatus500(stream.out())) {
    std::fprintf(stderr, "500 from the client HTTP API:\n%s\n", stream.out().c_str());
    std::abort();
  }
  if ((mode & 1) && map != before) {
    std::fprintf(stderr, "the map changed without the token\n");
    std::abort();
  }
  for (const auto& [key, value] : map) {
    if (key.empty() || value.size() > setup.options.max_body_bytes) std::abort();
  }
  return 0;
}

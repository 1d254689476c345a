// libFuzzer target for the metadata server's HTTP request handling: the raw
// request bytes go through cpp-httplib's request parser into the routes,
// limits and handlers MetadataServer::InstallRoutes installs (the same ones
// Start serves), over an in-memory stream: no socket is opened. The first
// input byte picks the setup (bit 0: an auth token is set; bits 1-2: small
// key and value limits); the rest is one connection's bytes, up to
// kMaxRequests keep-alive requests. Checked, besides ASan/UBSan:
//   - no request gets a 500 (the store is in memory: nothing may fail);
//   - with a token set, no request changes the store (nobody here has it);
//   - a write-once ("rpc_meta") key keeps its value;
//   - keys and values stay within the configured limits.
// Run: tests/fuzz/run_fuzz.sh metadata_http_fuzz.
#include <httplib.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "common/log.h"
#include "metadata/kv_store.h"
#include "metadata/metadata_server.h"
#include "http_fuzz_stream.h"

using namespace mc;

namespace {

const char* const kToken = "fuzz-secret-token-7f3a9c1e5b2d4086";
const char* const kDescriptorKey = "mooncake/ram/seg0";
const char* const kDescriptor =
    "{\"name\":\"seg0\",\"protocol\":\"tcp\",\"tcp_data_port\":40000,\"buffers\":[]}";
const char* const kOnceKey = "mooncake/rpc_meta/node0";
const char* const kOnceValue = "{\"ip_or_host_name\":\"10.0.0.1\",\"rpc_port\":12001}";

// One server per setup, reused across inputs (building the routes compiles
// their regexes); the store is reset to the two seed keys before each input.
struct Setup {
  MetadataServerConfig config;
  std::unique_ptr<metadata::MetadataServer> server;
  FuzzServer http;
};

Setup& SetupFor(uint8_t mode) {
  static std::unique_ptr<Setup> setups[8];
  std::unique_ptr<Setup>& s = setups[mode & 7];
  if (s == nullptr) {
    s = std::make_unique<Setup>();
    s->config.threads = 1;
    if (mode & 1) s->config.auth_token = kToken;
    if (mode & 2) s->config.max_key_bytes = 24;
    if (mode & 4) s->config.max_value_bytes = 64;
    auto server = metadata::MetadataServer::Open(s->config);
    if (!server.ok()) std::abort();
    s->server = std::move(server).value();
    s->server->InstallRoutes(s->http);
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
  const MetadataServerConfig& config = setup.config;
  metadata::KvStore& store = setup.server->store();
  for (const std::string& key : store.List("")) {
    if (!store.Delete(key).ok()) std::abort();
  }
  if (!store.Put(kDescriptorKey, kDescriptor).ok() || !store.Put(kOnceKey, kOnceValue).ok()) {
    if (!(mode & 6)) std::abort();  // only the small limits may refuse the seeds
  }
  const auto before = store.List("");
  FuzzServer& http = setup.http;
  FuzzStream stream(data + 1, size - 1);
  http.Serve(stream);

  if (AnyStatus500(stream.out())) {
    std::fprintf(stderr, "500 from the metadata server:\n%s\n", stream.out().c_str());
    std::abort();
  }
  const auto after = store.List("");
  if ((mode & 1) && after != before) {
    std::fprintf(stderr, "the store changed without the token\n");
    std::abort();
  }
  auto once = store.Get(kOnceKey);
  if (once.ok() && *once != kOnceValue) std::abort();
  for (const std::string& key : after) {
    if (key.empty() || key.size() > config.max_key_bytes) std::abort();
    auto value = store.Get(key);
    if (!value.ok() || value->size() > config.max_value_bytes) std::abort();
  }
  if ((mode & 1) && store.Get(kDescriptorKey).ok() &&
      *store.Get(kDescriptorKey) != kDescriptor) {
    std::abort();
  }
  return 0;
}

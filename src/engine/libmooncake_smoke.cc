// Links against the installed form of the library: libmooncake.so and the
// public header alone (no src/ include path), so a header that needs an
// internal one, or a symbol missing from the shared object, fails the build
// or this run. Exits 0 when the calls answer as mooncake-python(3) says.
#include <mooncake/client.h>

#include <cstdio>
#include <cstring>

int main() {
  mooncake::Store store;
  unsigned char buf[64];
  std::memset(buf, 0, sizeof buf);
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) {
      std::fprintf(stderr, "FAIL %s\n", what);
      ++failures;
    }
  };
  expect(store.HealthCheck() == 1, "health_check before setup is 1");
  expect(store.GetInto("k", buf, sizeof buf) == mooncake::kInvalidParams,
         "get_into before setup is INVALID_PARAMS");
  expect(store.Setup({{"global_segment_size", "4xb"}}) == mooncake::kInvalidParams,
         "a bad size is INVALID_PARAMS");
  expect(std::strcmp(mooncake::ErrorName(-704), "OBJECT_NOT_FOUND") == 0, "error names");
  expect(store.Close() == 0, "close");
  std::printf("%s\n", failures ? "libmooncake smoke test failed" : "libmooncake smoke test passed");
  return failures ? 1 : 0;
}

// libFuzzer target for the dummy-client protocol's decoders
// (proto/dummy_ops.h, msg/dummy_messages.h): what `mooncake client` reads
// from a dummy (every request of the table) and what a dummy reads back
// (every reply). The first input byte picks the row and the direction; the
// rest is the payload. Each decoder must return a value or PROTOCOL_ERROR,
// and a value must re-encode and decode to the same bytes.
// Run: tests/fuzz/run_fuzz.sh dummy_fuzz.
#include <cstdint>
#include <string>

#include "codec_roundtrip.h"
#include "proto/dummy_ops.h"

using namespace mc;
using namespace mc::proto;

namespace {

using Fn = void (*)(std::string_view);

// Both directions of every row, in table order.
constexpr Fn kDecoders[] = {
#define MC_DUMMY_FUZZ_ROW(name, value, Req, Rep) \
  &mc::fuzz::Check<Req>, &mc::fuzz::CheckReply<Rep>,
    MC_DUMMY_OPS(MC_DUMMY_FUZZ_ROW)
#undef MC_DUMMY_FUZZ_ROW
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  kDecoders[data[0] % (sizeof(kDecoders) / sizeof(kDecoders[0]))](bytes);
  return 0;
}

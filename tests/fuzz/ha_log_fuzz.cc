// libFuzzer target for what an HA master reads from etcd: the v3 gateway's
// JSON replies and base64 (ha/gateway_json.cc) and the entries of the HA log
// (masterd/ha_records.cc), plain or compressed. Any input must be parsed or
// refused with PROTOCOL_ERROR / INVALID_PARAMS; what decodes must encode
// (and compress) and decode back to the same. Run: tests/fuzz/run_fuzz.sh ha_log_fuzz.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/log.h"
#include "ha/gateway_json.h"
#include "masterd/ha_image.h"

using namespace mc;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  SetLogLevel(LogLevel::ERROR);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto json = ha::ParseGatewayJson(bytes);
  if (!json.ok() && json.status().code() != ErrorCode::PROTOCOL_ERROR) std::abort();
  if (json.ok()) (void)(*json)["kvs"]["x"].Int();

  auto decoded = ha::Base64Decode(bytes);
  if (decoded.ok()) {
    auto again = ha::Base64Decode(ha::Base64Encode(*decoded));
    if (!again.ok() || *again != *decoded) std::abort();
  } else if (decoded.status().code() != ErrorCode::INVALID_PARAMS) {
    std::abort();
  }

  auto entry = masterd::DecodeHaEntry(bytes);
  if (!entry.ok()) {
    if (entry.status().code() != ErrorCode::PROTOCOL_ERROR) std::abort();
    return 0;
  }
  const std::string encoded = masterd::EncodeHaEntry(*entry);
  auto back = masterd::DecodeHaEntry(encoded);
  if (!back.ok() || masterd::EncodeHaEntry(*back) != encoded) std::abort();
  // What a leader ships: deflated (when smaller), it reads back the same.
  const std::string packed = masterd::CompressHaEntry(encoded);
  if (!packed.empty()) {
    auto inflated = masterd::DecodeHaEntry(packed);
    if (packed.size() >= encoded.size() || !inflated.ok() ||
        masterd::EncodeHaEntry(*inflated) != encoded) {
      std::abort();
    }
  }
  return 0;
}

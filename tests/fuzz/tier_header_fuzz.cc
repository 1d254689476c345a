// libFuzzer target for the disk tier's object file header
// (src/tier/object_file.cc), which a store reads back from its own disk at
// start and on every read: any bytes (a torn, flipped or foreign file) are
// refused or decode to a header that encodes back to the same bytes.
// Input: the first bytes of a file.
// Run: tests/fuzz/run_fuzz.sh tier_header_fuzz.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tier/object_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto h = mc::tier::DecodeHeader(data, size);
  if (!h.ok()) return 0;
  if (h->key.size() > mc::tier::kMaxObjectKeyBytes) std::abort();
  std::vector<uint8_t> again(h->data_offset());
  mc::tier::EncodeHeader(*h, again.data());
  const size_t used = mc::tier::kFixedHeaderBytes + h->key.size();
  if (used > size || std::memcmp(again.data(), data, used) != 0) std::abort();
  auto back = mc::tier::DecodeHeader(again.data(), again.size());
  if (!back.ok() || back->key != h->key || back->size_bytes != h->size_bytes ||
      back->generation != h->generation || back->data_crc != h->data_crc)
    std::abort();
  return 0;
}

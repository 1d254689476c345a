#include "transfer/stream_copy.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

namespace mc::transfer {

TEST_CASE("StreamCopy copies every byte at any alignment and length, and nothing more") {
  const size_t kMax = kStreamCopyMinBytes + 300;
  std::vector<uint8_t> src(kMax + 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  // Lengths below, at and just above the streaming threshold, with ragged
  // tails; source and destination offsets that break every alignment.
  for (size_t len : {size_t{0}, size_t{1}, size_t{63}, size_t{4096}, kStreamCopyMinBytes - 1,
                     kStreamCopyMinBytes, kStreamCopyMinBytes + 1, kStreamCopyMinBytes + 63,
                     kStreamCopyMinBytes + 64, kMax}) {
    for (size_t src_off : {0, 1, 15, 33}) {
      for (size_t dst_off : {0, 1, 16, 47, 63}) {
        std::vector<uint8_t> dst(kMax + 128, 0xAB);
        StreamCopy(dst.data() + dst_off, src.data() + src_off, len);
        bool same = true, untouched = true;
        for (size_t i = 0; i < len; ++i) same &= dst[dst_off + i] == src[src_off + i];
        for (size_t i = 0; i < dst_off; ++i) untouched &= dst[i] == 0xAB;
        for (size_t i = dst_off + len; i < dst.size(); ++i) untouched &= dst[i] == 0xAB;
        CAPTURE(len);
        CAPTURE(src_off);
        CAPTURE(dst_off);
        CHECK(same);
        CHECK(untouched);
      }
    }
  }
}

}  // namespace mc::transfer

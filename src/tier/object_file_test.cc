#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tier/crc32c.h"
#include "tier/object_file.h"

namespace mc::tier {
namespace {

TEST_CASE("the interleaved crc32 streams agree with the table at every length and offset") {
  std::vector<uint8_t> data(3 * 3 * 8192 + 3 * 256 + 777);
  uint32_t x = 12345;
  for (auto& b : data) b = static_cast<uint8_t>((x = x * 1103515245u + 12345u) >> 16);
  for (size_t offset : {0, 1, 7}) {
    for (size_t len : {size_t{0}, size_t{5}, size_t{8}, size_t{767}, size_t{768}, size_t{3 * 8192},
                       size_t{3 * 8192 + 3 * 256 + 9}, data.size() - 7}) {
      CAPTURE(offset); CAPTURE(len);
      CHECK(Crc32c(0, data.data() + offset, len) == Crc32cPortable(0, data.data() + offset, len));
      CHECK(Crc32c(0x1234, data.data() + offset, len) ==
            Crc32cPortable(0x1234, data.data() + offset, len));
    }
  }
}

TEST_CASE("crc32c gives the published check value and extends in pieces") {
  const std::string digits = "123456789";
  CHECK(Crc32c(0, digits.data(), digits.size()) == 0xe3069283u);
  std::vector<uint8_t> big(100003);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 131 + 7);
  const uint32_t whole = Crc32c(0, big.data(), big.size());
  const uint32_t pieces = Crc32c(Crc32c(0, big.data(), 4097), big.data() + 4097, big.size() - 4097);
  CHECK(whole == pieces);
  big[5000] ^= 1;
  CHECK(Crc32c(0, big.data(), big.size()) != whole);
}

TEST_CASE("an object header decodes to what was encoded, padded to a block") {
  ObjectHeader h{"kv/block/17", 123457, 42, 0xdeadbeef};
  CHECK(h.data_offset() == kBlockBytes);
  CHECK(h.file_bytes() == kBlockBytes + AlignToBlock(123457));
  std::vector<uint8_t> buf(h.data_offset());
  EncodeHeader(h, buf.data());
  auto d = DecodeHeader(buf.data(), buf.size());
  REQUIRE(d.ok());
  CHECK(d->key == h.key);
  CHECK(d->size_bytes == h.size_bytes);
  CHECK(d->generation == h.generation);
  CHECK(d->data_crc == h.data_crc);
}

TEST_CASE("a header with any flipped bit or cut short is refused") {
  ObjectHeader h{"key-with-some-length", 4096, 7, 99};
  std::vector<uint8_t> buf(h.data_offset());
  EncodeHeader(h, buf.data());
  const size_t used = kFixedHeaderBytes + h.key.size();
  for (size_t byte = 0; byte < used; ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> bad = buf;
      bad[byte] ^= static_cast<uint8_t>(1 << bit);
      CHECK_MESSAGE(!DecodeHeader(bad.data(), bad.size()).ok(), "byte ", byte, " bit ", bit);
    }
  }
  for (size_t cut = 0; cut < used; ++cut) CHECK(!DecodeHeader(buf.data(), cut).ok());
}

TEST_CASE("a key longer than one block moves the data to the next block boundary") {
  ObjectHeader h{std::string(5000, 'k'), 1, 1, 0};
  CHECK(h.data_offset() == 2 * kBlockBytes);
  std::vector<uint8_t> buf(h.data_offset());
  EncodeHeader(h, buf.data());
  auto d = DecodeHeader(buf.data(), buf.size());
  REQUIRE(d.ok());
  CHECK(d->key == h.key);
}

}  // namespace
}  // namespace mc::tier

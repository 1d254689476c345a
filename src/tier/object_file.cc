#include "tier/object_file.h"

#include <cstring>

#include "common/byte_io.h"
#include "tier/crc32c.h"

namespace mc::tier {

namespace {
uint32_t HeaderCrc(const uint8_t* fixed, std::string_view key) {
  return Crc32c(Crc32c(0, fixed, 32), key.data(), key.size());
}
}  // namespace

void EncodeHeader(const ObjectHeader& h, uint8_t* out) {
  std::memset(out, 0, h.data_offset());
  StoreLe32(out, kObjectMagic);
  StoreLe16(out + 4, kObjectVersion);
  StoreLe64(out + 8, h.size_bytes);
  StoreLe64(out + 16, h.generation);
  StoreLe32(out + 24, h.data_crc);
  StoreLe32(out + 28, static_cast<uint32_t>(h.key.size()));
  StoreLe32(out + 32, HeaderCrc(out, h.key));
  std::memcpy(out + kFixedHeaderBytes, h.key.data(), h.key.size());
}

Result<ObjectHeader> DecodeHeader(const uint8_t* in, size_t size) {
  if (size < kFixedHeaderBytes)
    return Error(ErrorCode::INVALID_PARAMS, "object header cut short at " +
                                                std::to_string(size) + " bytes");
  if (LoadLe32(in) != kObjectMagic || LoadLe16(in + 4) != kObjectVersion ||
      LoadLe16(in + 6) != 0)
    return Error(ErrorCode::CHECKSUM_MISMATCH, "not a version 1 object file (bad magic)");
  const uint32_t key_bytes = LoadLe32(in + 28);
  if (key_bytes > kMaxObjectKeyBytes)
    return Error(ErrorCode::CHECKSUM_MISMATCH,
                 "object header names a key of " + std::to_string(key_bytes) + " bytes");
  if (size < kFixedHeaderBytes + key_bytes)
    return Error(ErrorCode::INVALID_PARAMS, "object header cut short: key of " +
                                                std::to_string(key_bytes) + " bytes");
  ObjectHeader h;
  h.key.assign(reinterpret_cast<const char*>(in + kFixedHeaderBytes), key_bytes);
  if (HeaderCrc(in, h.key) != LoadLe32(in + 32))
    return Error(ErrorCode::CHECKSUM_MISMATCH, "object header checksum mismatch");
  h.size_bytes = LoadLe64(in + 8);
  h.generation = LoadLe64(in + 16);
  h.data_crc = LoadLe32(in + 24);
  return h;
}

}  // namespace mc::tier

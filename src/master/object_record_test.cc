// ObjectRecord: the buffers and the pin expiry that shares their heap array
// survive every change of the other.
#include "master/object_record.h"

#include <doctest/doctest.h>

#include <vector>

using namespace mc::master;

namespace {

void CheckBuffers(const ObjectRecord& rec, const std::vector<uint64_t>& want) {
  REQUIRE(uint64_t{rec.buffer_count} == want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK(rec.buffers()[i] == want[i]);
}

}  // namespace

TEST_CASE("a pin expiry comes and goes without touching the buffers, whatever their count") {
  for (uint32_t count : {0u, 1u, 2u, 5u}) {
    CAPTURE(count);
    std::vector<uint64_t> buffers;
    for (uint32_t i = 0; i < count; ++i) buffers.push_back(PackBuffer(i + 1, 64 * (i + 7)));
    ObjectRecord rec;
    CHECK(rec.pin_expiry_us() == 0);
    rec.SetBuffers(buffers.data(), count);
    CheckBuffers(rec, buffers);
    rec.set_pin_expiry_us(ObjectRecord::kHardPin);
    CHECK(rec.pin_expiry_us() == ObjectRecord::kHardPin);
    CheckBuffers(rec, buffers);
    rec.set_pin_expiry_us(12345);  // in place
    CHECK(rec.pin_expiry_us() == 12345);
    CheckBuffers(rec, buffers);
    // New buffers keep the pin; fewer or more than before.
    std::vector<uint64_t> other(count == 1 ? 3 : 1, PackBuffer(9, 640));
    rec.SetBuffers(other.data(), static_cast<uint32_t>(other.size()));
    CheckBuffers(rec, other);
    CHECK(rec.pin_expiry_us() == 12345);
    rec.set_pin_expiry_us(0);
    CHECK(rec.pin_expiry_us() == 0);
    CheckBuffers(rec, other);
    rec.SetBuffers(nullptr, 0);
    CHECK(uint64_t{rec.buffer_count} == 0);
    CHECK(rec.pin_expiry_us() == 0);
  }
}

TEST_CASE("the record's size and buffer count share a word without clobbering each other") {
  ObjectRecord rec;
  rec.size_bytes = ObjectRecord::kMaxSizeBytes;
  const uint64_t two[] = {PackBuffer(1, 0), PackBuffer(2, 64)};
  rec.SetBuffers(two, 2);
  CHECK(uint64_t{rec.size_bytes} == ObjectRecord::kMaxSizeBytes);
  CHECK(uint64_t{rec.buffer_count} == 2);
  rec.replicas = 16;
  rec.set_pin_expiry_us(1);
  CHECK(unsigned{rec.replicas} == 16);
  CHECK(rec.flags == 0);
  CHECK(sizeof(ObjectRecord) == 40);
}

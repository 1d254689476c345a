#include "common/byte_io.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>

#include "common/test_seed.h"

using namespace mc;

TEST_CASE("fixed-position integers are stored least significant byte first") {
  uint8_t b[8] = {};
  StoreLe32(b, 0x11223344u);
  CHECK(b[0] == 0x44);
  CHECK(b[3] == 0x11);
  StoreLe16(b + 4, 0xa1b2);
  CHECK(b[4] == 0xb2);
  CHECK(b[5] == 0xa1);
  CHECK(LoadLe32(b) == 0x11223344u);
  CHECK(LoadLe16(b + 4) == 0xa1b2);
  StoreLe64(b, 0x0102030405060708ull);
  CHECK(b[0] == 0x08);
  CHECK(b[7] == 0x01);
  CHECK(LoadLe64(b) == 0x0102030405060708ull);
}

TEST_CASE("random integers survive store and load at every width") {
  std::mt19937_64 rng(TestSeed("byte_io"));
  for (int i = 0; i < 1000; ++i) {
    uint64_t v = rng();
    uint8_t b[8];
    StoreLe64(b, v);
    CHECK(LoadLe64(b) == v);
    StoreLe32(b, static_cast<uint32_t>(v));
    CHECK(LoadLe32(b) == static_cast<uint32_t>(v));
    StoreLe16(b, static_cast<uint16_t>(v));
    CHECK(LoadLe16(b) == static_cast<uint16_t>(v));
  }
}

TEST_CASE("the writer's bytes are the fixed-position coding, and the reader reads them back") {
  std::string out;
  ByteWriter w(&out);
  w.U16(0x1234);
  w.U32(0xdeadbeef);
  w.U64(0x0102030405060708ull);
  w.Str("abc");
  w.Str16("xy");
  w.Bool(true);
  REQUIRE(out.size() == 2 + 4 + 8 + (4 + 3) + (2 + 2) + 1);
  CHECK(LoadLe16(out.data()) == 0x1234);
  CHECK(LoadLe32(out.data() + 2) == 0xdeadbeef);
  CHECK(LoadLe64(out.data() + 6) == 0x0102030405060708ull);
  CHECK(LoadLe32(out.data() + 14) == 3);
  CHECK(LoadLe16(out.data() + 21) == 2);

  ByteReader r(out);
  CHECK(r.U16("a") == 0x1234);
  CHECK(r.U32("b") == 0xdeadbeef);
  CHECK(r.U64("c") == 0x0102030405060708ull);
  std::string s, t;
  r.Str(&s, 16, "s");
  r.Str16(&t, 16, "t");
  CHECK(s == "abc");
  CHECK(t == "xy");
  CHECK(r.Bool("flag"));
  CHECK(r.AtEnd());
  CHECK(r.Finish("test").ok());
}

TEST_CASE("a reader's first failure sticks and names its field") {
  std::string out;
  ByteWriter w(&out);
  w.Str16("too long for the limit");
  w.U32(7);
  ByteReader r(out);
  std::string s;
  r.Str16(&s, 4, "name");
  CHECK(!r.ok());
  CHECK(r.U32("after") == 0);  // no read after a failure
  CHECK(!r.AtEnd());
  auto st = r.Finish("thing");
  CHECK(st.code() == ErrorCode::PROTOCOL_ERROR);
  CHECK(st.message().find("'name'") != std::string::npos);
  CHECK(st.message().find("longer than its limit") != std::string::npos);

  ByteReader truncated(out.data(), 1);
  CHECK(truncated.U16("len") == 0);
  CHECK(truncated.Finish("thing").message().find("truncated") != std::string::npos);

  ByteReader trailing(out);
  trailing.U8("first");
  CHECK(trailing.ok());
  CHECK(!trailing.AtEnd());
  CHECK(trailing.Finish("thing").message().find("trailing bytes") != std::string::npos);
}

TEST_CASE("varints take 7 bits a byte and read back only in their shortest form") {
  auto bytes = [](uint64_t v) {
    std::string out;
    ByteWriter(&out).Var(v);
    return out;
  };
  CHECK(bytes(0) == std::string(1, '\0'));
  CHECK(bytes(127) == "\x7f");
  CHECK(bytes(128) == "\x80\x01");
  CHECK(bytes(4096) == "\x80\x20");
  CHECK(bytes(UINT64_MAX).size() == 10);

  std::mt19937_64 rng(TestSeed("varints"));
  for (int i = 0; i < 10000; ++i) {
    const uint64_t v = rng() >> (rng() % 64);
    const std::string b = bytes(v);
    ByteReader r(b);
    CHECK(r.Var("v") == v);
    REQUIRE(r.Finish("varint").ok());
  }

  auto error = [](std::string_view b) {
    ByteReader r(b);
    r.Var("len");
    return std::string(r.Finish("thing").message());
  };
  // 0 in two bytes
  CHECK(error(std::string("\x80\x00", 2)).find("shortest form") != std::string::npos);
  CHECK(error("\x80").find("truncated") != std::string::npos);
  CHECK(error("").find("truncated") != std::string::npos);
  CHECK(error(std::string(9, '\xff') + "\x02").find("64 bits") != std::string::npos);
  CHECK(error(std::string(10, '\xff') + "\x01").find("64 bits") != std::string::npos);
  CHECK(error(std::string(9, '\xff') + "\x01").empty());  // UINT64_MAX itself

  std::string s;
  ByteWriter(&s).VarStr("segment-a");
  ByteWriter(&s).Var(3);  // a count of 3 with 0 bytes after it
  ByteReader r(s);
  std::string name;
  r.VarStr(&name, 64, "name");
  CHECK(name == "segment-a");
  CHECK(r.VarCount(100, "count") == 0);
  CHECK(r.Finish("thing").message().find("more items than bytes left") != std::string::npos);
  ByteReader limited(s);
  limited.VarStr(&name, 4, "name");
  CHECK(limited.Finish("thing").message().find("longer than its limit") != std::string::npos);
}

#include "common/units.h"

#include <doctest/doctest.h>

using mc::DurationUnit;
using mc::ParseDurationUs;
using mc::ParseSize;

TEST_CASE("sizes parse as users write them") {
  CHECK(ParseSize("3355443200").value() == 3355443200ull);
  CHECK(ParseSize("50gb").value() == 50ull << 30);
  CHECK(ParseSize("16GB").value() == 16ull << 30);
  CHECK(ParseSize("512mb").value() == 512ull << 20);
  CHECK(ParseSize("1.5 GB").value() == 3ull << 29);
  CHECK(ParseSize("4k").value() == 4096);
  CHECK(ParseSize("2GiB").value() == 2ull << 30);
  CHECK(ParseSize(" 7 b ").value() == 7);
  CHECK(ParseSize("0").value() == 0);
}

TEST_CASE("bad sizes are refused with the reason") {
  auto neg = ParseSize("-1gb");
  REQUIRE_FALSE(neg.ok());
  CHECK(neg.status().message().find("negative") != std::string::npos);
  auto suffix = ParseSize("12xb");
  REQUIRE_FALSE(suffix.ok());
  CHECK(suffix.status().message().find("unknown size suffix 'xb'") != std::string::npos);
  CHECK_FALSE(ParseSize("").ok());
  CHECK_FALSE(ParseSize("gb").ok());
  CHECK_FALSE(ParseSize("1e9").ok());
  CHECK_FALSE(ParseSize("1.5").ok());
  CHECK_FALSE(ParseSize("99999999999999999999").ok());
  CHECK_FALSE(ParseSize("17000000pb").ok());
}

TEST_CASE("durations take a plain number in the setting's unit or a suffix") {
  CHECK(ParseDurationUs("10000", DurationUnit::kMilliseconds).value() == 10000000);
  CHECK(ParseDurationUs("10", DurationUnit::kSeconds).value() == 10000000);
  CHECK(ParseDurationUs("500ms", DurationUnit::kSeconds).value() == 500000);
  CHECK(ParseDurationUs("10s", DurationUnit::kMilliseconds).value() == 10000000);
  CHECK(ParseDurationUs("5m", DurationUnit::kMilliseconds).value() == 300000000);
  CHECK(ParseDurationUs("1.5s", DurationUnit::kMilliseconds).value() == 1500000);
  CHECK_FALSE(ParseDurationUs("-5s", DurationUnit::kSeconds).ok());
  CHECK_FALSE(ParseDurationUs("5 fortnights", DurationUnit::kSeconds).ok());
}

TEST_CASE("sizes and durations print back in a readable form") {
  CHECK(mc::FormatBytesHuman(100ull << 20) == "100.00 MB");
  CHECK(mc::FormatBytesHuman(512) == "512 B");
  CHECK(mc::FormatDurationUs(10000000) == "10s");
  CHECK(mc::FormatDurationUs(1500000) == "1500ms");
  CHECK(mc::FormatDurationUs(1800000000) == "30m");
}

#include "transfer/memory_budget.h"

#include <doctest/doctest.h>

using mc::transfer::CheckSegmentFits;
using mc::transfer::kSegmentHeadroomBytes;
using mc::transfer::MemoryFacts;

namespace {
constexpr uint64_t kGiB = 1ull << 30;
}

TEST_CASE("a segment that fits every bound with headroom is accepted") {
  MemoryFacts f;
  f.host_available_bytes = 20 * kGiB;
  f.cgroup_limit_bytes = 8 * kGiB;
  f.cgroup_usage_bytes = 1 * kGiB;
  f.cgroup_file = "/sys/fs/cgroup/x/memory.max";
  f.shm_free_bytes = 12 * kGiB;
  CHECK(CheckSegmentFits(4 * kGiB, f).ok());
  CHECK(CheckSegmentFits(7 * kGiB - kSegmentHeadroomBytes, f).ok());
  CHECK_FALSE(CheckSegmentFits(7 * kGiB - kSegmentHeadroomBytes + 1, f).ok());
  CHECK(CheckSegmentFits(4 * kGiB, MemoryFacts{}).ok());  // nothing known: nothing refused
}

TEST_CASE("a segment past the cgroup's room names the request, the limit and huge pages") {
  MemoryFacts f;
  f.host_available_bytes = 20 * kGiB;
  f.cgroup_limit_bytes = 2 * kGiB;
  f.cgroup_usage_bytes = 100ull << 20;
  f.cgroup_file = "/sys/fs/cgroup/memory/t/memory.limit_in_bytes";
  f.huge_pages_free = 3;
  mc::Status st = CheckSegmentFits(4 * kGiB, f);
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == mc::ErrorCode::INVALID_PARAMS);
  const std::string& m = st.message();
  CHECK(m.find("segment of 4.00 GB") != std::string::npos);
  CHECK(m.find("memory.limit_in_bytes = 2.00 GB") != std::string::npos);
  CHECK(m.find("100.00 MB in use") != std::string::npos);
  CHECK(m.find("huge pages: 3 of 2 MiB free, 2048 would hold it") != std::string::npos);
  CHECK(m.find("MemAvailable") == std::string::npos);  // the host had room
}

TEST_CASE("the host's available memory and the tmpfs bound a segment too") {
  MemoryFacts f;
  f.host_available_bytes = 24 * kGiB;
  f.shm_free_bytes = 12 * kGiB;
  mc::Status st = CheckSegmentFits(50 * kGiB, f);
  REQUIRE_FALSE(st.ok());
  CHECK(st.message().find("MemAvailable) leaves 24.00 GB") != std::string::npos);
  CHECK(st.message().find("tmpfs leaves 12.00 GB") != std::string::npos);
}

TEST_CASE("the facts of this machine are read") {
  MemoryFacts f = mc::transfer::ReadMemoryFacts("/dev/shm");
  REQUIRE(f.host_available_bytes.has_value());
  CHECK(*f.host_available_bytes > 0);
  CHECK(f.shm_free_bytes.has_value());
}

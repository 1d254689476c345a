// Parsing and printing of sizes and durations as users write them.
//
// Sizes: a plain byte count ("3355443200") or a number with a case-insensitive
// suffix in powers of 1024 ("4k", "512mb", "16GB", "1.5 GB", "2GiB"). Durations:
// a plain number in the caller's unit ("10000" for a millisecond setting) or a
// number with a suffix ("250us", "500ms", "10s", "5m", "2h"). Pure functions,
// thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace mc {

// Errors name the input and the reason, e.g. "'12xb': unknown size suffix 'xb'".
Result<uint64_t> ParseSize(std::string_view text);

enum class DurationUnit { kMicroseconds, kMilliseconds, kSeconds };

// Returns microseconds. `plain_unit` is the unit of a number with no suffix.
Result<uint64_t> ParseDurationUs(std::string_view text, DurationUnit plain_unit);

// "94.09 MB" style, powers of 1024, two decimals ("512 B" below 1 KiB).
std::string FormatBytesHuman(uint64_t bytes);

// "10s", "500ms", "250us": the shortest exact spelling, for printing configs.
std::string FormatDurationUs(uint64_t us);

}  // namespace mc

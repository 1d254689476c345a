#include "common/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>

namespace mc {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

struct Number {
  std::string digits;  // integer and optional fraction, validated
  bool has_fraction = false;
  std::string_view rest;  // what follows the number (suffix), trimmed
};

// Splits "1.5 GB" into "1.5" and "GB". Rejects signs, empty numbers and
// exponents, so "-1", "gb" and "1e9" are errors rather than surprises.
Result<Number> SplitNumber(std::string_view raw, std::string_view what) {
  std::string_view s = Trim(raw);
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::INVALID_PARAMS,
                 "'" + std::string(raw) + "': " + why);
  };
  if (s.empty()) return bad("empty " + std::string(what));
  if (s.front() == '-') return bad(std::string(what) + " must not be negative");
  if (s.front() == '+') s.remove_prefix(1);
  Number n;
  size_t i = 0;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    ++i;
    ++int_digits;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    n.has_fraction = true;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      ++i;
      ++frac_digits;
    }
  }
  if (int_digits == 0 && frac_digits == 0) return bad("not a number");
  if (n.has_fraction && frac_digits == 0) return bad("not a number");
  n.digits = std::string(s.substr(0, i));
  n.rest = Trim(s.substr(i));
  return n;
}

// value * multiplier, rounded down, with overflow checked. Integers are done
// exactly; fractions go through long double, which is exact enough for the
// few significant digits people write ("1.5 GB").
Result<uint64_t> Scale(const Number& n, uint64_t multiplier, std::string_view raw) {
  auto overflow = [&] {
    return Error(ErrorCode::INVALID_PARAMS,
                 "'" + std::string(raw) + "': value too large");
  };
  if (!n.has_fraction) {
    uint64_t v = 0;
    for (char c : n.digits) {
      if (v > (std::numeric_limits<uint64_t>::max() - 9) / 10) return overflow();
      v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    if (multiplier != 0 && v > std::numeric_limits<uint64_t>::max() / multiplier) return overflow();
    return v * multiplier;
  }
  long double v = std::strtold(n.digits.c_str(), nullptr) * static_cast<long double>(multiplier);
  if (!(v < 18446744073709551615.0L)) return overflow();
  return static_cast<uint64_t>(std::floor(v));
}

}  // namespace

Result<uint64_t> ParseSize(std::string_view text) {
  MC_ASSIGN_OR_RETURN(Number n, SplitNumber(text, "size"));
  std::string suffix = Lower(n.rest);
  uint64_t mult = 0;
  if (suffix.empty() || suffix == "b") {
    mult = 1;
  } else {
    static constexpr struct {
      char letter;
      uint64_t mult;
    } kUnits[] = {{'k', 1ull << 10}, {'m', 1ull << 20}, {'g', 1ull << 30},
                  {'t', 1ull << 40}, {'p', 1ull << 50}};
    for (const auto& u : kUnits) {
      if (suffix[0] != u.letter) continue;
      std::string_view tail = std::string_view(suffix).substr(1);
      if (tail.empty() || tail == "b" || tail == "ib") mult = u.mult;
    }
  }
  if (mult == 0) {
    return Error(ErrorCode::INVALID_PARAMS,
                 "'" + std::string(text) + "': unknown size suffix '" +
                     std::string(n.rest) + "' (use b, kb, mb, gb, tb)");
  }
  if (n.has_fraction && mult == 1) {
    return Error(ErrorCode::INVALID_PARAMS,
                 "'" + std::string(text) + "': a byte count must be a whole number");
  }
  return Scale(n, mult, text);
}

Result<uint64_t> ParseDurationUs(std::string_view text, DurationUnit plain_unit) {
  MC_ASSIGN_OR_RETURN(Number n, SplitNumber(text, "duration"));
  std::string suffix = Lower(n.rest);
  uint64_t mult = 0;
  if (suffix.empty()) {
    mult = plain_unit == DurationUnit::kMicroseconds ? 1
           : plain_unit == DurationUnit::kMilliseconds ? 1000
                                                       : 1000000;
  } else if (suffix == "us") {
    mult = 1;
  } else if (suffix == "ms") {
    mult = 1000;
  } else if (suffix == "s") {
    mult = 1000000;
  } else if (suffix == "m" || suffix == "min") {
    mult = 60ull * 1000000;
  } else if (suffix == "h") {
    mult = 3600ull * 1000000;
  } else {
    return Error(ErrorCode::INVALID_PARAMS,
                 "'" + std::string(text) + "': unknown duration suffix '" +
                     std::string(n.rest) + "' (use us, ms, s, m, h)");
  }
  return Scale(n, mult, text);
}

std::string FormatBytesHuman(uint64_t bytes) {
  static constexpr const char* kNames[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int i = 0;
  while (v >= 1024.0 && i < 5) {
    v /= 1024.0;
    ++i;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %s", v, kNames[i]);
  return buf;
}

std::string FormatDurationUs(uint64_t us) {
  if (us == 0) return "0s";
  if (us % (3600ull * 1000000) == 0) return std::to_string(us / (3600ull * 1000000)) + "h";
  if (us % (60ull * 1000000) == 0) return std::to_string(us / (60ull * 1000000)) + "m";
  if (us % 1000000 == 0) return std::to_string(us / 1000000) + "s";
  if (us % 1000 == 0) return std::to_string(us / 1000) + "ms";
  return std::to_string(us) + "us";
}

}  // namespace mc

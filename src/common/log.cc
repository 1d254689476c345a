#include "common/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

namespace mc {

namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::INFO)};
constexpr const char* kNames[] = {"DEBUG", "INFO", "WARN", "ERROR"};
}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }

bool ParseLogLevel(std::string_view text, LogLevel* out) {
  static constexpr std::string_view kLower[] = {"debug", "info", "warn", "error"};
  for (int i = 0; i < 4; ++i) {
    if (text == kLower[i]) {
      *out = static_cast<LogLevel>(i);
      return true;
    }
  }
  return false;
}

LogLine::LogLine(LogLevel level, const char* file, int line) : level_(level) {
  using namespace std::chrono;
  auto now = system_clock::now();
  std::time_t secs = system_clock::to_time_t(now);
  auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[64];
  std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  std::string_view base(file);
  if (auto pos = base.rfind('/'); pos != std::string_view::npos) base.remove_prefix(pos + 1);
  out_ << stamp << ' ' << kNames[static_cast<int>(level_)] << ' ' << base << ':' << line << "] ";
}

LogLine::~LogLine() {
  out_ << '\n';
  std::string s = out_.str();
  // One write per line so concurrent threads never interleave within a line.
  ssize_t n = ::write(STDERR_FILENO, s.data(), s.size());
  (void)n;
}

}  // namespace mc

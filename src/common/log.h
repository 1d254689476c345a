// Minimal leveled logging to stderr, one line per message, with a UTC
// timestamp and level. Thread-safe: each line is written with one write(2).
//
//   MC_LOG(INFO) << "segment " << name << " mounted";
#pragma once

#include <sstream>
#include <string_view>

namespace mc {

enum class LogLevel { DEBUG = 0, INFO = 1, WARN = 2, ERROR = 3 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// "debug", "info", "warn", "error"; false if unknown.
bool ParseLogLevel(std::string_view text, LogLevel* out);

class LogLine {
 public:
  LogLine(LogLevel level, const char* file, int line);
  ~LogLine();
  LogLine(const LogLine&) = delete;
  LogLine& operator=(const LogLine&) = delete;
  std::ostream& stream() { return out_; }

 private:
  LogLevel level_;
  std::ostringstream out_;
};

}  // namespace mc

namespace mc {
// Turns `stream << ...` into a void expression, so MC_LOG is one
// expression: `if (x) MC_LOG(WARN) << y; else ...` binds as written, and
// compilers do not warn of a dangling else. `&` binds looser than `<<`.
struct LogVoidify {
  void operator&(std::ostream&) {}
};
}  // namespace mc

#define MC_LOG(level)                                             \
  (::mc::LogLevel::level < ::mc::GetLogLevel())                   \
      ? (void)0                                                   \
      : ::mc::LogVoidify() & ::mc::LogLine(::mc::LogLevel::level, __FILE__, __LINE__).stream()

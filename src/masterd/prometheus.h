// A small builder for the Prometheus text exposition format (version 0.0.4):
// one HELP and TYPE line per metric family, then its samples. Output passes
// `promtool check metrics`. Not thread-safe; build one per scrape.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mc::masterd {

// Durations in fixed buckets, for a Prometheus histogram: the upper bounds
// (seconds) run from 1 ms to 5 s, and a last bucket takes what is above.
// Not thread-safe (the owner's lock guards it).
struct SecondsHistogram {
  static constexpr std::array<double, 12> kBounds = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
                                                     0.1,   0.2,   0.5,   1,    2,    5};
  std::array<uint64_t, kBounds.size() + 1> buckets{};  // each its own, not cumulative
  double sum = 0;

  void Add(double seconds);
  uint64_t count() const;
};

class PrometheusText {
 public:
  using Labels = std::vector<std::pair<std::string, std::string>>;

  // Counters must be named *_total (promtool insists).
  void Counter(std::string_view name, std::string_view help, double value,
               const Labels& labels = {});
  void Gauge(std::string_view name, std::string_view help, double value,
             const Labels& labels = {});

  // A histogram family: name_bucket{le=...} (cumulative, +Inf last),
  // name_sum and name_count. `name` carries no suffix of its own.
  void Histogram(std::string_view name, std::string_view help, const SecondsHistogram& h,
                 const Labels& labels = {});

  const std::string& str() const { return out_; }

 private:
  void Family(std::string_view name, std::string_view help, std::string_view type);
  void Sample(std::string_view name, double value, const Labels& labels);

  std::string out_;
  std::vector<std::string> families_;
};

}  // namespace mc::masterd

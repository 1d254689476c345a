// A small builder for the Prometheus text exposition format (version 0.0.4):
// one HELP and TYPE line per metric family, then its samples. Output passes
// `promtool check metrics`. Not thread-safe; build one per scrape.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mc::masterd {

class PrometheusText {
 public:
  using Labels = std::vector<std::pair<std::string, std::string>>;

  // Counters must be named *_total (promtool insists).
  void Counter(std::string_view name, std::string_view help, double value,
               const Labels& labels = {});
  void Gauge(std::string_view name, std::string_view help, double value,
             const Labels& labels = {});

  const std::string& str() const { return out_; }

 private:
  void Family(std::string_view name, std::string_view help, std::string_view type);
  void Sample(std::string_view name, double value, const Labels& labels);

  std::string out_;
  std::vector<std::string> families_;
};

}  // namespace mc::masterd

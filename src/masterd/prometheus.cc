#include "masterd/prometheus.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>

namespace mc::masterd {

namespace {

std::string EscapeLabel(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

void PrometheusText::Family(std::string_view name, std::string_view help, std::string_view type) {
  // A family's HELP/TYPE appears once, before its first sample.
  if (std::find(families_.begin(), families_.end(), name) != families_.end()) return;
  families_.emplace_back(name);
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += help;
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void PrometheusText::Sample(std::string_view name, double value, const Labels& labels) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i) out_ += ',';
      out_ += labels[i].first + "=\"" + EscapeLabel(labels[i].second) + '"';
    }
    out_ += '}';
  }
  char buf[64];
  if (value == std::floor(value) && std::fabs(value) < 1e18) {
    std::snprintf(buf, sizeof buf, " %lld\n", static_cast<long long>(value));
  } else {
    std::snprintf(buf, sizeof buf, " %.17g\n", value);
  }
  out_ += buf;
}

void PrometheusText::Counter(std::string_view name, std::string_view help, double value,
                             const Labels& labels) {
  assert(name.size() > 6 && name.substr(name.size() - 6) == "_total");
  Family(name, help, "counter");
  Sample(name, value, labels);
}

void PrometheusText::Gauge(std::string_view name, std::string_view help, double value,
                           const Labels& labels) {
  // The reference's dashboards use gauges named *_count (master_key_count);
  // promtool reserves that suffix for histograms and summaries except on
  // untyped metrics, so those keep their names and are exported untyped.
  bool reserved = name.size() > 6 && name.substr(name.size() - 6) == "_count";
  Family(name, help, reserved ? "untyped" : "gauge");
  Sample(name, value, labels);
}

void SecondsHistogram::Add(double seconds) {
  size_t i = 0;
  while (i < kBounds.size() && seconds > kBounds[i]) ++i;
  ++buckets[i];
  sum += seconds;
}

uint64_t SecondsHistogram::count() const {
  uint64_t n = 0;
  for (uint64_t b : buckets) n += b;
  return n;
}

void PrometheusText::Histogram(std::string_view name, std::string_view help,
                               const SecondsHistogram& h, const Labels& labels) {
  Family(name, help, "histogram");
  const std::string base(name);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.buckets.size(); ++i) {
    cumulative += h.buckets[i];
    char le[32];
    if (i < SecondsHistogram::kBounds.size()) {
      std::snprintf(le, sizeof le, "%g", SecondsHistogram::kBounds[i]);
    } else {
      std::snprintf(le, sizeof le, "+Inf");
    }
    Labels with_le = labels;
    with_le.emplace_back("le", le);
    Sample(base + "_bucket", static_cast<double>(cumulative), with_le);
  }
  Sample(base + "_sum", h.sum, labels);
  Sample(base + "_count", static_cast<double>(cumulative), labels);
}

}  // namespace mc::masterd

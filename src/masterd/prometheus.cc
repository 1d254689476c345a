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

}  // namespace mc::masterd

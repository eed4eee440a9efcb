#include "serve/metrics.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "core/errors.h"

namespace mstar::serve {

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {
  MSTAR_ASSERT(std::is_sorted(bounds_.begin(), bounds_.end()), "histogram bounds must ascend");
}

void Histogram::observe(double v) {
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), v);  // first bound >= v: v <= le
  ++counts_[static_cast<size_t>(it - bounds_.begin())];
  sum_ += v;
  ++count_;
}

uint64_t Histogram::cumulative(size_t i) const {
  uint64_t c = 0;
  for (size_t b = 0; b <= i && b < counts_.size(); ++b) c += counts_[b];
  return c;
}

void Histogram::render(std::string& out, std::string_view name, std::string_view help) const {
  metric_header(out, name, "histogram", help);
  uint64_t c = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    c += counts_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], c);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, count_);
  out += fmt::format("{}_sum {}\n{}_count {}\n", name, sum_, name, count_);
}

std::vector<double> step_buckets() {
  return {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};
}

std::vector<double> first_chunk_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
}

std::string label_value(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void metric_header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

int64_t resident_bytes() {
  // statm: size resident shared text lib data dt, in pages.
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  return static_cast<int64_t>(resident) * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace mstar::serve

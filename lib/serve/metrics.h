#pragma once
// What the server counts for /metrics, in fixed-size structures: counters,
// and histograms whose buckets are chosen once (the engine's own RunStats
// keeps every latency sample, which grows with the run; a server that runs
// for weeks must not). Rendering follows the Prometheus text exposition
// format, version 0.0.4.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mstar::serve {

// Cumulative-bucket histogram over fixed upper bounds (ascending; +Inf is
// implied). Not thread-safe: its owner guards it.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }
  const std::vector<double>& bounds() const { return bounds_; }
  // The count of observations <= bounds()[i] (i == bounds().size(): all).
  uint64_t cumulative(size_t i) const;
  // `name`_bucket{le=...}, `name`_sum and `name`_count lines, after HELP and TYPE.
  void render(std::string& out, std::string_view name, std::string_view help) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; the last is (bounds_.back(), +Inf)
  double sum_ = 0;
  uint64_t count_ = 0;
};

// Step latency buckets, seconds: the tiny demo models step in 1-5 ms on two
// cores, the world demo in about 60 ms, bigger models on the CPU in seconds.
std::vector<double> step_buckets();
// Time to first chunk (or frame) buckets, seconds: a request admitted at once
// sees its first chunk after chunk_tokens steps (tens of ms on the demos); one
// that waits for a slot waits for a whole stream to end (seconds to minutes).
std::vector<double> first_chunk_buckets();

// A label value escaped as the exposition format requires (\\, \" and \n).
std::string label_value(std::string_view v);

// Appends "# HELP" and "# TYPE" lines.
void metric_header(std::string& out, std::string_view name, std::string_view type, std::string_view help);

// The process's resident set now, from /proc/self/statm (0 when it cannot be read).
int64_t resident_bytes();

}  // namespace mstar::serve

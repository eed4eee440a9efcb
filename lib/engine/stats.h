#pragma once
// What a run measured: throughput, latency percentiles, admission waits,
// resource occupancy at the peak and the process's peak resident memory.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mstar {

struct ResourceUsage {
  std::string key;
  std::string type;            // bounded_kv / ring_kv
  std::size_t bytes = 0;       // memory_bytes()
  int64_t capacity = 0;        // slots or sessions
  int64_t peak_in_use = 0;
};

// Latency samples in bounded memory: every value counts toward count() and
// sum(), and percentiles come from a uniform sample of at most kCapacity of
// them (reservoir sampling with a fixed seed, so a run's figures are
// reproducible). Runs of up to kCapacity values keep them all and are exact;
// a stream that runs for hours keeps 128 KiB, not one double per step.
class Samples {
 public:
  static constexpr std::size_t kCapacity = 16384;
  void add(double v);
  int64_t count() const { return count_; }
  double sum() const { return sum_; }
  // Nearest-rank percentile (p in [0, 100]) of the kept values; 0 when empty.
  double percentile(double p) const;
  std::span<const double> kept() const { return {buffer_.data(), kept_}; }

 private:
  // Sized to kCapacity at the first value and filled at once, so the memory
  // is claimed when a run starts, not a page at a time as it goes on.
  std::vector<double> buffer_;
  std::size_t kept_ = 0;
  int64_t count_ = 0;
  double sum_ = 0;
  uint64_t rng_ = 0x9E3779B97F4A7C15ull;
};

struct RunStats {
  std::string unit = "tokens";  // or "frames"
  int64_t steps = 0;
  int64_t produced = 0;         // tokens or frames
  int64_t requests_done = 0, requests_failed = 0, requests_cancelled = 0;
  int64_t requests_resumed = 0;  // streams continued from a snapshot
  int64_t admission_waits = 0;  // request-steps spent refused for now
  double seconds = 0;       // serving: since the engine was ready (what rates divide by)
  double load_seconds = 0;  // building the engine: weights, model, resources, voices' prefill
  Samples step_ms;
  Samples host_ms;  // per step: admission, planning, scheduling, events (all but the forward and sampling)
  Samples first_output_ms;  // arrival to first token or frame produced
  Samples first_chunk_ms;   // arrival to the first chunk (or frame) event sent
  std::vector<ResourceUsage> resources;
  std::size_t weights_bytes = 0;  // the model's weights as stored (read or made)
  int64_t peak_rss_bytes = 0;

  nlohmann::json to_json() const;
  std::string table() const;
};

// Nearest-rank percentile (p in [0, 100]) of unsorted values; 0 when empty.
double percentile(std::vector<double> v, double p);
// The process's peak resident set, from getrusage.
int64_t peak_rss_bytes();

}  // namespace mstar

#pragma once
// What a run measured: throughput, latency percentiles, admission waits,
// resource occupancy at the peak and the process's peak resident memory.
#include <cstdint>
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

struct RunStats {
  std::string unit = "tokens";  // or "frames"
  int64_t steps = 0;
  int64_t produced = 0;         // tokens or frames
  int64_t requests_done = 0, requests_failed = 0, requests_cancelled = 0;
  int64_t admission_waits = 0;  // request-steps spent refused for now
  double seconds = 0;
  std::vector<double> step_ms;
  std::vector<double> host_ms;  // per step: admission, planning, scheduling, events (all but the forward and sampling)
  std::vector<double> first_chunk_ms;  // arrival to first chunk or frame
  std::vector<ResourceUsage> resources;
  std::size_t weights_bytes = 0;  // the model's weights as stored (mapped or made)
  int64_t peak_rss_bytes = 0;

  nlohmann::json to_json() const;
  std::string table() const;
};

// Nearest-rank percentile (p in [0, 100]) of unsorted values; 0 when empty.
double percentile(std::vector<double> v, double p);
// The process's peak resident set, from getrusage.
int64_t peak_rss_bytes();

}  // namespace mstar

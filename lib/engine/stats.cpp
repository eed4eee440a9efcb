#include "engine/stats.h"

#include <algorithm>
#include <cmath>

#include <sys/resource.h>

#include <fmt/format.h>

namespace mstar {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

void Samples::add(double v) {
  ++count_;
  sum_ += v;
  if (buffer_.empty()) buffer_.assign(kCapacity, 0.0);
  if (kept_ < kCapacity) {
    buffer_[kept_++] = v;
    return;
  }
  // Algorithm R: the count_-th value replaces a kept one with probability
  // kCapacity / count_ (splitmix64 draws the slot).
  rng_ += 0x9E3779B97F4A7C15ull;
  uint64_t x = rng_;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  const uint64_t slot = x % static_cast<uint64_t>(count_);
  if (slot < kCapacity) buffer_[static_cast<size_t>(slot)] = v;
}

double Samples::percentile(double p) const {
  return mstar::percentile(std::vector<double>(buffer_.begin(), buffer_.begin() + static_cast<long>(kept_)), p);
}

int64_t peak_rss_bytes() {
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

nlohmann::json RunStats::to_json() const {
  nlohmann::json res = nlohmann::json::array();
  for (const auto& r : resources)
    res.push_back({{"resource_key", r.key}, {"type", r.type}, {"bytes", r.bytes}, {"capacity", r.capacity},
                   {"peak_in_use", r.peak_in_use}});
  return {{"unit", unit},
          {"steps", steps},
          {"produced", produced},
          {"per_second", seconds > 0 ? static_cast<double>(produced) / seconds : 0.0},
          {"seconds", seconds},
          {"load_seconds", load_seconds},
          {"requests", {{"done", requests_done}, {"failed", requests_failed}, {"cancelled", requests_cancelled},
                        {"resumed", requests_resumed}}},
          {"admission_waits", admission_waits},
          {"step_ms", {{"p50", step_ms.percentile(50)}, {"p95", step_ms.percentile(95)}, {"p99", step_ms.percentile(99)}}},
          {"host_ms", {{"p50", host_ms.percentile(50)}, {"p95", host_ms.percentile(95)}}},
          {"first_output_ms", {{"p50", first_output_ms.percentile(50)}, {"p95", first_output_ms.percentile(95)}}},
          {"first_chunk_ms", {{"p50", first_chunk_ms.percentile(50)}, {"p95", first_chunk_ms.percentile(95)}}},
          {"resources", res},
          {"weights_bytes", weights_bytes},
          {"peak_rss_bytes", peak_rss_bytes}};
}

std::string RunStats::table() const {
  std::string o;
  o += fmt::format("{:<24} {}\n", "requests", fmt::format("{} done, {} failed, {} cancelled", requests_done,
                                                         requests_failed, requests_cancelled));
  o += fmt::format("{:<24} {:.2f} s (weights, model, resources, voices)\n", "load", load_seconds);
  o += fmt::format("{:<24} {} in {:.2f} s after load: {:.1f} {}/s\n", unit, produced, seconds,
                   seconds > 0 ? static_cast<double>(produced) / seconds : 0.0, unit);
  o += fmt::format("{:<24} {} steps; p50 {:.2f} ms, p95 {:.2f} ms, p99 {:.2f} ms\n", "step latency", steps,
                   step_ms.percentile(50), step_ms.percentile(95), step_ms.percentile(99));
  if (unit == "frames") {
    o += fmt::format("{:<24} p50 {:.1f} ms, p95 {:.1f} ms\n", "time to first frame", first_chunk_ms.percentile(50),
                     first_chunk_ms.percentile(95));
  } else {
    o += fmt::format("{:<24} p50 {:.1f} ms, p95 {:.1f} ms\n", "time to first token", first_output_ms.percentile(50),
                     first_output_ms.percentile(95));
    o += fmt::format("{:<24} p50 {:.1f} ms, p95 {:.1f} ms\n", "time to first chunk", first_chunk_ms.percentile(50),
                     first_chunk_ms.percentile(95));
  }
  o += fmt::format("{:<24} {} request-steps\n", "admission waits", admission_waits);
  for (const auto& r : resources)
    o += fmt::format("{:<24} {} bytes; {} {} of {} in use at the peak\n", fmt::format("{} ({})", r.key, r.type), r.bytes,
                     r.peak_in_use, r.type == "ring_kv" ? "sessions" : "slots", r.capacity);
  o += fmt::format("{:<24} {} bytes\n", "weights", weights_bytes);
  o += fmt::format("{:<24} {:.1f} MiB\n", "peak resident memory", static_cast<double>(peak_rss_bytes) / (1 << 20));
  return o;
}

}  // namespace mstar

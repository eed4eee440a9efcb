#pragma once
// Whole-engine benchmarks: a deployment's workload run several times, the
// concurrency sweep (1, 4, 16 streams ...), and one stream of growing length
// through the bounded cache against a full-history cache of the same model.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/report.h"
#include "config/deployment.h"
#include "backend.h"
#include "engine/stats.h"

namespace mstar::bench {

// Resolves the config with overrides; throws ConfigError with the diagnostics.
ResolvedDeployment resolve_or_throw(const std::filesystem::path& config, const std::vector<std::string>& sets);

// One row per repeat of the workload, plus the median row.
Table bench_run(const ResolvedDeployment& d, int repeats);

// Aggregate and per-stream throughput with `streams` requests arriving at
// once (slots, sessions and batch raised to fit them), and the host-side
// share of a step.
Table bench_concurrency(const std::filesystem::path& config, const std::vector<std::string>& sets,
                        const std::vector<int64_t>& streams, int64_t tokens);

// A Hugging Face checkpoint folder served as a speech model (a manifest and
// deployment written for it): how long loading takes (weights mapped, model
// and resources built, one voice prefilled), the resident memory after it,
// and the concurrency sweep. `window` is the bounded cache's window.
struct CheckpointBench {
  Table load;   // load_s, weights_mib, rss_after_load_mib
  Table sweep;  // bench_concurrency's table
};
CheckpointBench bench_checkpoint(const std::filesystem::path& folder, const std::string& kind, Backend backend,
                                 int threads, const std::vector<int64_t>& streams, int64_t tokens, int64_t window);

struct StreamPoint {
  int64_t length;
  double bounded_ms_per_token, full_ms_per_token;
  int64_t bounded_kv_bytes, full_kv_bytes;  // KV the cache must hold at this length
  int64_t rss_bytes;                        // the process's resident set after both
};
// One tts request decoding up to each length (advanced by chunked prefill
// between checkpoints, then `probe` single-token steps timed).
std::vector<StreamPoint> bench_stream(const ResolvedDeployment& d, const std::vector<int64_t>& lengths, int probe);
Table stream_table(const std::vector<StreamPoint>& points);

int64_t current_rss_bytes();

}  // namespace mstar::bench

#pragma once
// Whole-engine benchmarks: a deployment's workload run several times, the
// concurrency sweep (1, 4, 16 streams ...), and one stream of growing length
// through the bounded cache against a full-history cache of the same model.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/report.h"
#include "core/progress.h"
#include "models/architecture.h"
#include "config/deployment.h"
#include "kernels/backend.h"
#include "engine/stats.h"

namespace mstar::bench {

// Resolves the config with overrides; throws ConfigError with the diagnostics.
ResolvedDeployment resolve_or_throw(const std::filesystem::path& config, const std::vector<std::string>& sets);

// One row per repeat of the workload, plus the median row.
Table bench_run(const ResolvedDeployment& d, int repeats);

// The deployment at each of `streams` concurrent streams: `streams`
// requests arriving at once, slots, sessions and batch raised to fit them.
// Resolved before anything runs, so a count the deployment cannot take is
// refused (a ConfigError naming the count and the tokens) before any time
// is spent.
struct ConcurrencySweep {
  std::vector<int64_t> streams;
  std::vector<ResolvedDeployment> deployments;  // one per count
  bool tts = false;                             // a speech model: tokens, else frames
};
ConcurrencySweep resolve_concurrency(const std::filesystem::path& config, const std::vector<std::string>& sets,
                                     const std::vector<int64_t>& streams, int64_t tokens);

// Aggregate and per-stream throughput at each of the sweep's counts, and
// the host-side share of a step. `rounds` times, every count in each round
// in turn (1, 16, 1, 16, ...): a shared machine's speed drifts from minute
// to minute, so a round's counts meet about the same moment, and the
// scalings are taken within one round: aggregate_scaling is a row's
// aggregate_per_s over the first count's (the whole run: prompts, decode,
// sampling), step_scaling its decode rate (streams / step_p50_ms) over the
// first count's.
// With more than one round, a "median" row per count follows: each column's
// median (nearest rank, mstar::percentile) over the rounds.
Table bench_concurrency(const ConcurrencySweep& sweep, int rounds);

// A Hugging Face checkpoint folder served as a speech model (a manifest and
// deployment written for it, a bounded cache of 4 sinks + `window`): how
// long loading takes (weights mapped, model and resources built, one voice
// prefilled) and the resident memory after it; the concurrency sweep;
// single-stream decode at each depth, bounded against full history (a
// bounded stream past sink + window reads the same entries at any depth);
// prefill of one prompt.
struct CheckpointOptions {
  std::string kind = "qwen2";
  Backend backend = Backend::cpu;
  int threads = 2;
  std::vector<int64_t> streams = {1, 4, 16};
  int64_t tokens = 64;   // each stream decodes, in the sweep
  int rounds = 1;        // of the sweep (bench_concurrency)
  int64_t window = 252;  // the bounded cache's window
  DType kv_dtype = DType::bf16;
  DType activations = DType::f32;  // the deployment's `activations`
  std::vector<int64_t> depths;  // none: no depth table
  int probe = 8;                // decode steps timed at each depth
  int64_t prefill = 0;          // prompt tokens; 0: no prefill table
  int64_t products = 0;         // rows of the products table (cpu only); 0: none
  int roofline = 0;             // pairs of bench_roofline; 0: none
  int neighbours = 0;           // busy loops beside the sweep and bench_roofline's pairs (bench/neighbours.h)
};
struct CheckpointBench {
  Table load;     // load_s, weights_mib, rss_after_load_mib
  // bench_concurrency's table, and each row's matrix products
  // (decode_product_flops: product_gflop a step, product_gflops over the
  // median step) beside the arithmetic peak measured before the sweep
  // (measure_compute_peak; the cpu backend only): peak_gflops, of_peak.
  // With `neighbours`, the busy loops run beside the sweep (not the peak).
  Table sweep;
  Table depths;   // stream_table at the depths
  Table prefill;  // bench_prefill's table
  // bench_step_products's table at `products` rows; when the sweep ran that
  // many streams, its last row's of_step is the products' sum over the
  // sweep's median step at that count (its last round's with one round).
  Table products;
  Table roofline;  // bench_roofline's table
};
CheckpointBench bench_checkpoint(const std::filesystem::path& folder, const CheckpointOptions& o);

// A decode step's matrix products at `rows` rows (one per stream), each
// timed alone with the weights cold (bench_matmul's "mstar", or
// "mstar-bf16-act" with bf16 activations): per layer q, k, v, o, gate, up
// and down, then the logits once; products of one shape share a row ("q/o"). Each
// row's step_ms is its calls a step x the median call; the last row ("all")
// their sum, which says how much of a step the products alone take.
Table bench_step_products(const TrunkShape& t, int64_t vocab, DType weights, DType activations, int64_t rows,
                          int threads, int repeats);

// One-stream decode beside the memory's read, pair by pair: each pair reads
// a 512 MiB array (ReadProbe: read_gbs, read4_gbs), then takes one untimed
// and one timed decode step of a fresh stream (step_ms, at the deployment's
// threads) and, with more than one thread, the same with one thread
// (one_thread_ms, a second model built with threads 1 over the same
// weights). of_read is the
// weights' bytes (every tensor as stored, each read once a step) over
// step_ms, as a share of the larger read of its own pair: the roofline
// "weight bytes per token / measured read bandwidth". over_one is
// one_thread_ms / step_ms. A shared machine's memory changes speed within
// seconds, so each step is set beside the read taken the moment before
// rather than one measured minutes apart. Rows: the pairs, then p10, median
// and p90 of every column. With `neighbours`, that many busy loops run
// beside the pairs (and their reads).
Table bench_roofline(const ResolvedDeployment& d, int pairs, int neighbours);

// One prompt of `tokens` fed into a fresh single-request cache in chunks of
// the query window, `repeats` times: median seconds and tokens per second.
Table bench_prefill(const ResolvedDeployment& d, int64_t tokens, int repeats);

struct StreamPoint {
  int64_t length;
  double bounded_ms_per_token, full_ms_per_token;
  int64_t bounded_kv_bytes, full_kv_bytes;  // KV the cache must hold at this length
  int64_t rss_bytes;                        // the process's resident set after both
};
// One tts request decoding up to each length, in increasing order (advanced
// by chunked prefill between checkpoints, then one untimed and `probe` timed
// single-token steps; the median step is reported). `progress` hears the
// tokens both streams have written, against both streams' longest length.
std::vector<StreamPoint> bench_stream(const ResolvedDeployment& d, std::vector<int64_t> lengths, int probe,
                                      const Progress& progress = {});
Table stream_table(const std::vector<StreamPoint>& points);

int64_t current_rss_bytes();

}  // namespace mstar::bench

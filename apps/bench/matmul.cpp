// mstar-bench matmul: the trunk's matrix product by each cpu path, hot and
// cold, against the memory's measured bandwidth and the arithmetic peak.
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "../cli.h"
#include "bench/compute.h"
#include "bench/matmul.h"
#include "bench/memory.h"
#include "bench/neighbours.h"
#include "subcommand.h"

namespace mstar::bench::command {

namespace {

struct MatmulOptions {
  MatmulShape shape;
  std::string rows = "1,4,16,64,512", dtype = "bf16", cache = "both";
  int repeats = 20;
  double bandwidth = 0;
  int neighbours = 0;
};

int run_matmul(const MatmulOptions& o, const Context& c) {
  const Format fmt_out = c.format;
  MatmulShape mshape = o.shape;
  double bw = o.bandwidth;
  mshape.dtype = parse_dtype(o.dtype, "--dtype");
  const std::vector<int64_t> row_counts = parse_list(o.rows, "--rows");
  const auto timed = [&](bool cold) { return o.cache == "both" || (o.cache == "cold") == cold; };
  for (int64_t rows : row_counts)  // every shape refused before anything is measured
    for (bool cold : {false, true})
      if (timed(cold))
        check_matmul_shape({rows, mshape.in, mshape.out, mshape.dtype, mshape.threads}, cold, c.machine.llc_bytes,
                           matmul_methods());
  if (bw <= 0) bw = measure_bandwidth(mshape.threads, 512 << 20, 5).triad_gbs;
  const ComputePeak peak = measure_compute_peak(mshape.threads, 5);
  Table t{{"method", "cache", "dtype", "rows", "in", "out", "threads", "median_us", "min_us", "weight_gbs",
           "of_bandwidth", "gflops", "of_peak"},
          {}};
  const Neighbours busy(o.neighbours);
  for (int64_t rows : row_counts) {
    mshape.rows = rows;
    for (bool cold : {false, true}) {
      if (!timed(cold)) continue;
      for (const MatmulResult& r : bench_matmul(mshape, cold, o.repeats, c.machine.llc_bytes, matmul_methods()))
        t.rows.push_back({r.method, cold ? "cold" : "hot", std::string(to_string(mshape.dtype)), rows, mshape.in,
                          mshape.out, mshape.threads, r.median_us, r.min_us, r.weight_gbs, r.weight_gbs / bw, r.gflops,
                          r.gflops / peak_gflops(peak, r.peak_op)});
    }
  }
  if (fmt_out == Format::markdown) {
    fmt::print("measured bandwidth (triad, {} threads): {:.1f} GB/s\n", mshape.threads, bw);
    fmt::print("measured peak ({} body, {} threads): f32 FMA {:.1f} GFLOP/s (median {:.1f})", peak.isa, peak.threads,
               peak.fma_gflops, peak.fma_median_gflops);
    if (peak.bf16_dot_gflops > 0)
      fmt::print(", vdpbf16ps {:.1f} (median {:.1f})", peak.bf16_dot_gflops, peak.bf16_dot_median_gflops);
    if (peak.tiles_gflops > 0)
      fmt::print(", tdpbf16ps {:.1f} (median {:.1f})", peak.tiles_gflops, peak.tiles_median_gflops);
    fmt::print("\n");
    if (o.neighbours > 0) fmt::print("timed beside {} busy-looping processes\n", o.neighbours);
    fmt::print("\n");
  }
  std::cout << render(t, fmt_out);
  return mstar::cli::kOk;
}

}  // namespace

void add_matmul(CLI::App& app, Subcommands& out) {
  auto [mm, o] = add_subcommand(app, out, "matmul",
                                "the trunk's matrix product by each cpu path, hot and cold, beside the measured "
                                "bandwidth and arithmetic peak",
                                run_matmul);
  MatmulShape& mshape = o->shape;
  mm->add_option("--rows", o->rows, "rows (tokens) per product, comma-separated");
  mm->add_option("--in", mshape.in, "input width")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  mm->add_option("--out", mshape.out, "output width")->check(CLI::Range(int64_t{1}, int64_t{1} << 22));
  mm->add_option("--dtype", o->dtype, "weight dtype (q8_0 ... q6_k: ggml's blocks, docs/gguf.md)")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "q5_k", "q6_k"}));
  mm->add_option("--threads", mshape.threads, "threads")->check(CLI::Range(1, 1024));
  mm->add_option("--repeats", o->repeats, "timed calls")->check(CLI::Range(1, 100000));
  mm->add_option("--cache", o->cache, "hot, cold or both")->check(CLI::IsMember({"hot", "cold", "both"}));
  mm->add_option("--bandwidth", o->bandwidth, "GB/s to compare with (default: measure it now)");
  mm->add_option("--neighbours", o->neighbours, kNeighboursHelp)->check(CLI::Range(0, 1024));
}

}  // namespace mstar::bench::command

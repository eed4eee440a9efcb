#include "bench/compute.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "kernels/cpu/peak_cpu.h"

namespace mstar::bench {

namespace {

using Clock = std::chrono::steady_clock;

// One timed run of `rounds` on every thread: the flops of all over the wall
// time of the slowest.
double run_gflops(kernels::CpuIsa isa, kernels::PeakOp op, int threads, int64_t rounds) {
  double flops = 0;
  float checksum = 0.0f;
  const auto t0 = Clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : flops, checksum)
  {
    const kernels::PeakRun r = kernels::cpu_peak_loop(isa, op, rounds);
    flops += r.flops;
    checksum += r.checksum;
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  // The chains converge to finite values (peak_cpu_impl.inc, peak_cpu.cpp).
  MSTAR_ASSERT(std::isfinite(checksum), "measure_compute_peak: the chains stay finite");
  return flops / s / 1e9;
}

// Best and median GFLOP/s over `repeats` runs of about 50 ms, the round
// count set from a first short run (which also wakes the threads and ramps
// the clocks).
std::pair<double, double> peak(kernels::CpuIsa isa, kernels::PeakOp op, int threads, int repeats) {
  constexpr int64_t kProbeRounds = 1 << 20;
  const double probe = run_gflops(isa, op, threads, kProbeRounds);
  const double flops_per_round = kernels::cpu_peak_loop(isa, op, 1).flops;
  const auto rounds = static_cast<int64_t>(std::max(1.0, 0.05 * probe * 1e9 / threads / flops_per_round));
  std::vector<double> g;
  for (int r = 0; r < repeats; ++r) g.push_back(run_gflops(isa, op, threads, rounds));
  std::sort(g.begin(), g.end());
  return {g.back(), g[g.size() / 2]};
}

}  // namespace

ComputePeak measure_compute_peak(int threads, int repeats) {
  MSTAR_ASSERT(threads >= 1 && repeats >= 1, "measure_compute_peak: threads and repeats from 1");
  const kernels::CpuIsa isa = kernels::best_cpu_isa();
  ComputePeak c;
  c.isa = kernels::cpu_isa_name(isa);
  c.threads = threads;
  std::tie(c.fma_gflops, c.fma_median_gflops) = peak(isa, kernels::PeakOp::fma, threads, repeats);
  if (kernels::has_bf16_pairs(isa))
    std::tie(c.bf16_dot_gflops, c.bf16_dot_median_gflops) = peak(isa, kernels::PeakOp::bf16_dot, threads, repeats);
  if (isa == kernels::CpuIsa::amx_bf16)
    std::tie(c.tiles_gflops, c.tiles_median_gflops) = peak(isa, kernels::PeakOp::tiles, threads, repeats);
  return c;
}

double peak_gflops(const ComputePeak& c, kernels::PeakOp op) {
  switch (op) {
    case kernels::PeakOp::fma: return c.fma_gflops;
    case kernels::PeakOp::bf16_dot: return c.bf16_dot_gflops;
    case kernels::PeakOp::tiles: return c.tiles_gflops;
  }
  return 0;
}

}  // namespace mstar::bench

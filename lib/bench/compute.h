#pragma once
// The machine's arithmetic ceiling: the cpu backend's multiply-add loop
// (kernels/cpu/peak_cpu.h) on every thread at once, best and median of
// repeats. A product's GFLOP/s is set beside it (mstar-bench matmul) as its
// bytes are beside the triad: the clock a core holds with all of them
// busy is measured, not taken from a data sheet.
#include <string>

#include "kernels/cpu/peak_cpu.h"

namespace mstar::bench {

struct ComputePeak {
  double fma_gflops = 0, fma_median_gflops = 0;  // f32 FMA, the best body's
  // vdpbf16ps, where the processor has AVX512_BF16; else 0.
  double bf16_dot_gflops = 0, bf16_dot_median_gflops = 0;
  // tdpbf16ps, where the processor has AMX-BF16 (amx_bf16); else 0.
  double tiles_gflops = 0, tiles_median_gflops = 0;
  std::string isa;  // the body measured
  int threads = 0;
};

// Each repeat runs about 50 ms.
ComputePeak measure_compute_peak(int threads, int repeats);

// The best GFLOP/s of `op` (0 where the processor lacks it).
double peak_gflops(const ComputePeak& c, kernels::PeakOp op);

}  // namespace mstar::bench

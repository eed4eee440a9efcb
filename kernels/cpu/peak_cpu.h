#pragma once
// Internal to the cpu backend and its benchmark: the arithmetic ceiling of
// one core's vector units, the figure a matrix product's GFLOP/s is set
// beside (mstar-bench matmul), as the triad is for the bytes it streams.
// A loop of independent multiply-add chains in registers, no memory
// traffic: enough chains per register file that every unit has work while
// each result waits out its latency.
#include <cstdint>

#include "kernels/cpu/isa.h"

namespace mstar::kernels {

enum class PeakOp : unsigned char {
  fma,      // f32 fused multiply-add, the bodies' arithmetic with f32 activations
  bf16_dot,  // vdpbf16ps, the avx512_bf16 product's (two multiply-adds per f32 lane)
  tiles      // tdpbf16ps, the amx_bf16 tiles' (16 x 16 sums, 32 multiply-adds each)
};

struct PeakRun {
  double flops = 0;      // floating-point operations the loop ran (a multiply-add counts 2)
  float checksum = 0.0f;  // the chains' sum, used so the loop cannot be dropped
};

// `rounds` passes over the chains with the body for `isa`. Precondition:
// cpu_supports(isa), has_bf16_pairs(isa) for PeakOp::bf16_dot and isa ==
// amx_bf16 for PeakOp::tiles.
PeakRun cpu_peak_loop(CpuIsa isa, PeakOp op, int64_t rounds);

// Per ISA: the f32 loop (ops_cpu_<isa>.cpp, peak_cpu_impl.inc).
#define MSTAR_PEAK_BODIES PeakRun fma_peak_loop(int64_t rounds);
namespace generic {
MSTAR_PEAK_BODIES
}
namespace avx2 {
MSTAR_PEAK_BODIES
}
namespace avx512 {
MSTAR_PEAK_BODIES
}
#undef MSTAR_PEAK_BODIES
// Four accumulator tiles, each tdpbf16ps waiting on the one before it on
// the same tile (matmul_cpu_amx.cpp).
namespace amx_bf16 {
PeakRun tile_peak_loop(int64_t rounds);
}

}  // namespace mstar::kernels

#pragma once
// Internal to the cpu backend: the per-ISA bodies of the trunk's elementwise
// ops (elementwise_cpu.cpp spreads them over the pool).
#include <cstdint>

#include "cpu/isa.h"

namespace mstar::kernels {

// The ops with a named instruction set (the backend passes best_cpu_isa();
// tests name each one the processor supports).
struct RmsNormParams;
struct SiluMulParams;
void rmsnorm_cpu_isa(const RmsNormParams& p, CpuIsa isa);
void silu_mul_cpu_isa(const SiluMulParams& p, CpuIsa isa);

// Per ISA:
// - silu_mul_span: a[i] = silu(a[i]) * b[i], i < n;
// - rmsnorm_row: out = x / sqrt(mean(x^2) + eps) * w over one row of width.
#define MSTAR_ELEMENTWISE_BODIES                                      \
  void silu_mul_span(float* a, const float* b, int64_t n);            \
  void rmsnorm_row(const float* x, const float* w, double eps, float* out, int64_t width);
namespace generic {
MSTAR_ELEMENTWISE_BODIES
}
namespace avx2 {
MSTAR_ELEMENTWISE_BODIES
}
namespace avx512 {
MSTAR_ELEMENTWISE_BODIES
}
#undef MSTAR_ELEMENTWISE_BODIES

}  // namespace mstar::kernels

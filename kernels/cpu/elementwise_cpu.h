#pragma once
// Internal to the cpu backend: the per-ISA bodies of the trunk's elementwise
// ops (elementwise_cpu.cpp spreads them over the pool).
#include <cstdint>

#include "kernels/cpu/isa.h"

namespace mstar::kernels {

// The ops with a named instruction set (the backend passes best_cpu_isa();
// tests name each one the processor supports).
struct RmsNormParams;
struct SiluMulParams;
void rmsnorm_cpu_isa(const RmsNormParams& p, CpuIsa isa);
void silu_mul_cpu_isa(const SiluMulParams& p, CpuIsa isa);
struct ExpScaledParams;
double exp_scaled_cpu_isa(const ExpScaledParams& p, CpuIsa isa);
struct MaxParams;
struct MaxFound;
MaxFound max_cpu_isa(const MaxParams& p, CpuIsa isa);
struct AtLeastParams;
int64_t at_least_cpu_isa(const AtLeastParams& p, CpuIsa isa);
struct EqualU16Params;
int64_t equal_u16_cpu_isa(const EqualU16Params& p, CpuIsa isa);
struct BlockSumsParams;
void block_sums_cpu_isa(const BlockSumsParams& p, CpuIsa isa);
struct BucketsParams;
void buckets_cpu_isa(const BucketsParams& p, CpuIsa isa);
struct ZeroBelowParams;
void zero_below_cpu_isa(const ZeroBelowParams& p, CpuIsa isa);

// Per ISA:
// - silu_mul_span: a[i] = silu(a[i]) * b[i], i < n;
// - rmsnorm_row: out = x / sqrt(mean(x^2) + eps) * w over one row of width;
// - exp_scaled_span: out[i] = exp((x[i] - shift) * scale), i < n, and their sum;
// - max_span: the largest x[i], i < n, NaNs ignored, and in *index the lowest
//   i holding it (-infinity and n when there is none); *finite: every x[i] is;
// - at_least_span: the i < n with x[i] >= floor, in order, into ids; how many;
// - equal_u16_span: the i < n with x[i] == value, in order, into ids; how many;
// - sum_f64_span: the sum of x[i], i < n, in double;
// - buckets_span: out[i] = min(trunc((top - x[i]) * scale), last), last where
//   that is not finite; x[i] <= top;
// - zero_below_span: w[i] = 0 where x[i] is not >= floor.
#define MSTAR_ELEMENTWISE_BODIES                                                   \
  void silu_mul_span(float* a, const float* b, int64_t n);                         \
  void rmsnorm_row(const float* x, const float* w, double eps, float* out, int64_t width); \
  double exp_scaled_span(const float* x, int64_t n, float shift, float scale, float* out); \
  float max_span(const float* x, int64_t n, int64_t* index, bool* finite);         \
  int64_t at_least_span(const float* x, int64_t n, float floor, int32_t* ids);      \
  int64_t equal_u16_span(const uint16_t* x, int64_t n, uint16_t value, int32_t* ids); \
  double sum_f64_span(const float* x, int64_t n);                                   \
  void buckets_span(const float* x, int64_t n, float top, float scale, uint16_t last, uint16_t* out); \
  void zero_below_span(const float* x, int64_t n, float floor, float* w);
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

// The trunk ops' bodies (matrix product, elementwise) for processors with
// AVX2, FMA and F16C, chosen at run time (cpu_supports in isa.cpp).
#include "core/dtype.h"
#include "cpu/elementwise_cpu.h"
#include "cpu/matmul_cpu.h"

#if defined(__x86_64__)
#include <immintrin.h>
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#define MSTAR_CPU_AVX2 1
#define MSTAR_CPU_ISA avx2
#include "cpu/vec.inc"
#include "cpu/matmul_cpu_impl.inc"
#include "cpu/elementwise_cpu_impl.inc"
#pragma GCC pop_options
#else
// Never chosen off x86-64 (cpu_supports says no); defined so the build links.
namespace mstar::kernels::avx2 {
void matmul_panel(const MatmulParams& p, int64_t o0, int64_t n) { generic::matmul_panel(p, o0, n); }
int64_t matmul_packed_cols() { return generic::matmul_packed_cols(); }
void matmul_packed(const MatmulParams& p, int64_t o0, int64_t n, float* packed) {
  generic::matmul_packed(p, o0, n, packed);
}
void silu_mul_span(float* a, const float* b, int64_t n) { generic::silu_mul_span(a, b, n); }
void rmsnorm_row(const float* x, const float* w, double eps, float* out, int64_t width) {
  generic::rmsnorm_row(x, w, eps, out, width);
}
}  // namespace mstar::kernels::avx2
#endif

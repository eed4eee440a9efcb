// The cpu backend's bodies (matrix product, elementwise, attention, the
// arithmetic peak loop) for processors with AVX-512 (F, BW, VL, DQ), chosen at
// run time (cpu_supports in isa.cpp): 16 f32 lanes, 32 registers.
//
// The avx512_bf16 level runs these same bodies. A bf16 pair dot product
// (vdpbf16ps) for attention's q.k over bf16 caches was written and measured
// (hd 128, 32/8 heads, 4,096 entries, hot, one thread, medians of 8
// interleaved runs of `mstar-bench kernels` on a 2-core AMD EPYC, Zen 5):
//   - queries rounded to bf16: about 12% faster than this body, but the
//     outputs moved by up to 1.5e-2 from the reference (3e-4 at softmax scale
//     1/sqrt(D), 1.5e-2 at the ring test's 0.3), far outside the cpu
//     backend's 1e-4 against the reference for every dtype;
//   - queries split into bf16 high + low parts (two pair products, exact in
//     f32): within 1.4e-5, but no faster than this body (within the noise):
//     it trades the key conversion for a second multiply-add per pair, and
//     the multiply-adds were the bound.
// Decode is bound by memory, not by q.k, so neither was kept. The matrix
// product rounds activations to bf16 only when the deployment asks
// (matmul_cpu_bf16.cpp).
#include "core/dtype.h"
#include "core/errors.h"
#include "kernels/cpu/attention_cpu.h"
#include "kernels/cpu/elementwise_cpu.h"
#include "kernels/cpu/matmul_cpu.h"
#include "kernels/cpu/peak_cpu.h"

#if defined(__x86_64__)
#include <immintrin.h>
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq")
// clang takes no `#pragma GCC target`; its own scoped attribute does the same
// (the fuzz preset builds with clang 14).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq"))), apply_to = function)
#endif
// GCC 12's AVX-512 headers start some conversions from a deliberately
// undefined register (_mm512_undefined_*), which -Wuninitialized reports.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define MSTAR_CPU_AVX512 1
#define MSTAR_CPU_ISA avx512
#include "kernels/cpu/vec.inc"
#include "kernels/cpu/matmul_cpu_impl.inc"
#include "kernels/cpu/elementwise_cpu_impl.inc"
#include "kernels/cpu/peak_cpu_impl.inc"
#include "kernels/cpu/attention_cpu_impl.inc"
#if defined(__clang__)
#pragma clang attribute pop
#endif
#pragma GCC pop_options
#endif  // off x86-64 nothing here: the dispatchers never name these bodies there

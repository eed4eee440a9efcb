// The cpu backend's body for processors with AVX2, FMA and F16C, chosen at
// run time by bounded_attention_cpu.cpp.
#include <immintrin.h>

#include "cpu/bounded_attention_cpu.h"

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#define MSTAR_CPU_AVX2 1
#define MSTAR_CPU_ISA avx2
#include "cpu/bounded_attention_cpu_impl.inc"
#pragma GCC pop_options
#else
namespace mstar::kernels::avx2 {
void attend_unit(const BoundedAttentionParams& p, int32_t r, int32_t h, const CpuScratch& s) {
  generic::attend_unit(p, r, h, s);
}
}  // namespace mstar::kernels::avx2
#endif

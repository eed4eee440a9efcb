// The cpu backend's bodies for processors with AVX2, FMA and F16C, chosen at
// run time (cpu_supports in isa.cpp).
#include <immintrin.h>

#include "cpu/attention_cpu.h"

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#define MSTAR_CPU_AVX2 1
#define MSTAR_CPU_ISA avx2
#include "cpu/attention_cpu_impl.inc"
#pragma GCC pop_options
#else
// Never chosen off x86-64 (cpu_supports says no); defined so the build links.
namespace mstar::kernels::avx2 {
void bounded_unit(const BoundedAttentionParams& p, int32_t r, int32_t h, const CpuScratch& s) {
  generic::bounded_unit(p, r, h, s);
}
void ring_unit(const RingAttentionParams& p, int32_t r, int32_t h, const CpuScratch& s) {
  generic::ring_unit(p, r, h, s);
}
}  // namespace mstar::kernels::avx2
#endif

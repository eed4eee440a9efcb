// The cpu backend's bodies for processors with AVX2, FMA and F16C, chosen at
// run time (cpu_units in attention_cpu.cpp): 8 f32 lanes.
#include "cpu/attention_cpu.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
// clang takes no `#pragma GCC target`; its own scoped attribute does the same
// (the fuzz preset builds with clang 14).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#endif
namespace mstar::kernels::avx2 {
namespace {

// The vector layer attention_cpu_impl.inc is written against (its list of
// members is there).
struct Vec {
  using R = __m256;
  static constexpr int W = 8;
  // 16 registers: two keys x four query rows of score accumulators, and two
  // registers of each row's accumulator per value pass.
  static constexpr int kKeys = 2;
  static constexpr int kValueCols = 2;
  static constexpr int kPrefetchChunks = 2;
  static R zero() { return _mm256_setzero_ps(); }
  static R set1(float x) { return _mm256_set1_ps(x); }
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, R v) { _mm256_storeu_ps(p, v); }
  static R broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R max(R a, R b) { return _mm256_max_ps(a, b); }
  static R fmadd(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R fnmadd(R a, R b, R c) { return _mm256_fnmadd_ps(a, b, c); }
  static R round(R x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static R scale2(R x, R n) {
    return _mm256_mul_ps(
        x, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23)));
  }
  static R zero_unless_gt(R x, R lo, R v) { return _mm256_and_ps(v, _mm256_cmp_ps(x, lo, _CMP_GT_OQ)); }
  static R unpacklo(R a, R b) { return _mm256_unpacklo_ps(a, b); }
  static R unpackhi(R a, R b) { return _mm256_unpackhi_ps(a, b); }
  template <int I>
  static R shuffle(R a, R b) {
    return _mm256_shuffle_ps(a, b, I);
  }
  static __m128 lanes128(R v) { return _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)); }
  template <int DT>  // 0 f32, 1 f16, 2 bf16
  static R load_kv(const void* base, int64_t at) {
    if constexpr (DT == 0) return _mm256_loadu_ps(static_cast<const float*>(base) + at);
    const auto* p = reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + at);
    if constexpr (DT == 1) return _mm256_cvtph_ps(_mm_loadu_si128(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(p)), 16));
  }
};

}  // namespace
}  // namespace mstar::kernels::avx2

#define MSTAR_CPU_ISA avx2
#define MSTAR_CPU_VEC 1
#include "cpu/attention_cpu_impl.inc"
#if defined(__clang__)
#pragma clang attribute pop
#endif
#pragma GCC pop_options
#endif  // off x86-64 nothing here is built, and cpu_units never names it

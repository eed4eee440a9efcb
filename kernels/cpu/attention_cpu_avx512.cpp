// The cpu backend's body for processors with AVX-512 (F, BW, VL, DQ), chosen
// at run time (cpu_units in attention_cpu.cpp): 16 f32 lanes, 32 registers.
//
// The avx512_bf16 level runs this same body. A bf16 pair dot product
// (vdpbf16ps) for q.k of bf16 caches was written and measured (hd 128, 32/8
// heads, 4,096 entries, hot, one thread, medians of 8 interleaved runs on
// the 2-core AMD EPYC of docs/PERFORMANCE.md):
//   - queries rounded to bf16: about 12% faster than this body, but the
//     outputs moved by up to 1.5e-2 from the reference (3e-4 at softmax scale
//     1/sqrt(D), 1.5e-2 at the ring test's 0.3), far outside the cpu
//     backend's 1e-4 against the reference for every dtype;
//   - queries split into bf16 high + low parts (two pair products, exact in
//     f32): within 1.4e-5, but no faster than this body (within the noise):
//     it trades the key conversion for a second multiply-add per pair, and
//     the multiply-adds were the bound.
// Decode is bound by memory, not by q.k, so neither was kept.
//
// GCC 12's AVX-512 intrinsics start from `__m512 __Y = __Y;` (an undefined
// register) and warn about it wherever they are inlined (GCC bug 105593,
// fixed in 13): silenced for this file only, before any header.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "cpu/attention_cpu.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq")
// clang takes no `#pragma GCC target`; its own scoped attribute does the same
// (the fuzz preset builds with clang 14).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq"))), apply_to = function)
#endif
namespace mstar::kernels::avx512 {
namespace {

// The vector layer attention_cpu_impl.inc is written against (its list of
// members is there).
struct Vec {
  using R = __m512;
  static constexpr int W = 16;
  // 32 registers: four keys x four query rows of score accumulators (scores
  // reduced four at a time), four registers of each row's accumulator per
  // value pass.
  static constexpr int kKeys = 4;
  static constexpr int kValueCols = 4;
  static constexpr int kPrefetchChunks = 2;
  static R zero() { return _mm512_setzero_ps(); }
  static R set1(float x) { return _mm512_set1_ps(x); }
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, R v) { _mm512_storeu_ps(p, v); }
  static R broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  static R max(R a, R b) { return _mm512_max_ps(a, b); }
  static R fmadd(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R fnmadd(R a, R b, R c) { return _mm512_fnmadd_ps(a, b, c); }
  static R round(R x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static R scale2(R x, R n) { return _mm512_scalef_ps(x, n); }
  static R zero_unless_gt(R x, R lo, R v) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lo, _CMP_GT_OQ), v); }
  static R unpacklo(R a, R b) { return _mm512_unpacklo_ps(a, b); }
  static R unpackhi(R a, R b) { return _mm512_unpackhi_ps(a, b); }
  template <int I>
  static R shuffle(R a, R b) {
    return _mm512_shuffle_ps(a, b, I);
  }
  static __m128 lanes128(R v) {
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  }
  template <int DT>  // 0 f32, 1 f16, 2 bf16
  static R load_kv(const void* base, int64_t at) {
    if constexpr (DT == 0) return _mm512_loadu_ps(static_cast<const float*>(base) + at);
    const auto* p = reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(base) + at);
    if constexpr (DT == 1) return _mm512_cvtph_ps(_mm256_loadu_si256(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(p)), 16));
  }
};

}  // namespace
}  // namespace mstar::kernels::avx512

#define MSTAR_CPU_ISA avx512
#define MSTAR_CPU_VEC 1
#include "cpu/attention_cpu_impl.inc"
#if defined(__clang__)
#pragma clang attribute pop
#endif
#pragma GCC pop_options

#endif  // off x86-64 nothing here is built, and cpu_units never names it

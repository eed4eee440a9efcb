// The arithmetic ceiling's dispatch (peak_cpu.h), and the vdpbf16ps loop,
// compiled for AVX512_BF16 here as matmul_cpu_bf16.cpp is.
#include "kernels/cpu/peak_cpu.h"

#include "core/errors.h"

#if defined(__x86_64__)
#include <immintrin.h>
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16"))), \
                             apply_to = function)
#endif

namespace mstar::kernels {
namespace {

// As the f32 loop (peak_cpu_impl.inc): 24 chains of the 32 registers, each
// vdpbf16ps adding 16 lanes x 2 products. The operands are bf16 pairs of
// 1/64 and 1/2, so each round adds 2 * (1/128) to every lane (the
// instruction rounds after each of the two): finite whatever the rounds,
// and exact while a lane stays under 2^17 (8.4 M rounds; the test runs
// 6,400); past that the sums round, which the timing does not mind.
PeakRun bf16_dot_peak_loop(int64_t rounds) {
  constexpr int kChains = 24;
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
  const __m512bh a = reinterpret_cast<__m512bh>(_mm512_set1_epi16(0x3c80));  // bf16 1/64
  const __m512bh b = reinterpret_cast<__m512bh>(_mm512_set1_epi16(0x3f00));  // bf16 1/2
  for (int64_t r = 0; r < rounds; ++r) {
#pragma GCC unroll 24
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
  }
  float lanes[16];
  float sum = 0.0f;
  for (int c = 0; c < kChains; ++c) {
    _mm512_storeu_ps(lanes, acc[c]);
    for (float v : lanes) sum += v;
  }
  return {4.0 * 16 * kChains * static_cast<double>(rounds), sum};
}

}  // namespace
}  // namespace mstar::kernels

#if defined(__clang__)
#pragma clang attribute pop
#endif
#pragma GCC pop_options
#endif

namespace mstar::kernels {

PeakRun cpu_peak_loop(CpuIsa isa, PeakOp op, int64_t rounds) {
  MSTAR_ASSERT(cpu_supports(isa), "cpu_peak_loop: this processor lacks the instruction set");
  MSTAR_ASSERT(rounds >= 0, "cpu_peak_loop: a count of rounds");
#if defined(__x86_64__)
  if (op == PeakOp::bf16_dot) {
    MSTAR_ASSERT(has_bf16_pairs(isa), "cpu_peak_loop: vdpbf16ps is an avx512_bf16 instruction");
    return bf16_dot_peak_loop(rounds);
  }
  if (op == PeakOp::tiles) {
    MSTAR_ASSERT(isa == CpuIsa::amx_bf16, "cpu_peak_loop: tdpbf16ps is an amx_bf16 instruction");
    return amx_bf16::tile_peak_loop(rounds);
  }
  if (isa == CpuIsa::avx2) return avx2::fma_peak_loop(rounds);
  if (has_avx512(isa)) return avx512::fma_peak_loop(rounds);
#endif
  MSTAR_ASSERT(op == PeakOp::fma, "cpu_peak_loop: vdpbf16ps and tdpbf16ps are x86-64 instructions");
  return generic::fma_peak_loop(rounds);
}

}  // namespace mstar::kernels

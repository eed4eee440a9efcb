// The cpu backend's elementwise trunk ops: the per-ISA bodies spread over the
// pool (rows for the norm, fixed spans for SwiGLU), and rope with each
// token's angles computed once for all its heads.
#include "kernels/cpu/elementwise_cpu.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/errors.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/ops.h"

namespace mstar::kernels {

namespace {

// Entries per SwiGLU task: large enough that a task outweighs handing it
// out, small enough that one decode row (a few thousand) still splits.
constexpr int64_t kSpan = 2048;

// Threads worth using for `work` entries: below a few thousand the pool's
// wake-up costs more than the loop.
int threads_for(int threads, int64_t work) { return work < 4096 ? 1 : threads; }

// The body of each op for an instruction set (the x86 ones exist only there).
struct Bodies {
  decltype(&generic::rmsnorm_row) rmsnorm_row;
  decltype(&generic::silu_mul_span) silu_mul_span;
  decltype(&generic::exp_scaled_span) exp_scaled_span;
  decltype(&generic::max_span) max_span;
  decltype(&generic::at_least_span) at_least_span;
  decltype(&generic::equal_u16_span) equal_u16_span;
  decltype(&generic::sum_f64_span) sum_f64_span;
  decltype(&generic::buckets_span) buckets_span;
  decltype(&generic::zero_below_span) zero_below_span;
};

Bodies bodies(CpuIsa isa) {
#if defined(__x86_64__)
  if (isa == CpuIsa::avx2)
    return {&avx2::rmsnorm_row, &avx2::silu_mul_span, &avx2::exp_scaled_span, &avx2::max_span,
            &avx2::at_least_span, &avx2::equal_u16_span, &avx2::sum_f64_span,
            &avx2::buckets_span, &avx2::zero_below_span};
  if (has_avx512(isa))
    return {&avx512::rmsnorm_row, &avx512::silu_mul_span, &avx512::exp_scaled_span, &avx512::max_span,
            &avx512::at_least_span, &avx512::equal_u16_span, &avx512::sum_f64_span,
            &avx512::buckets_span, &avx512::zero_below_span};
#endif
  (void)isa;
  return {&generic::rmsnorm_row, &generic::silu_mul_span, &generic::exp_scaled_span, &generic::max_span,
          &generic::at_least_span, &generic::equal_u16_span, &generic::sum_f64_span,
          &generic::buckets_span, &generic::zero_below_span};
}

}  // namespace

void rmsnorm_cpu(const RmsNormParams& p) { rmsnorm_cpu_isa(p, best_cpu_isa()); }
void silu_mul_cpu(const SiluMulParams& p) { silu_mul_cpu_isa(p, best_cpu_isa()); }
double exp_scaled_host(const ExpScaledParams& p) { return exp_scaled_cpu_isa(p, best_cpu_isa()); }
MaxFound max_host(const MaxParams& p) { return max_cpu_isa(p, best_cpu_isa()); }
int64_t at_least_host(const AtLeastParams& p) { return at_least_cpu_isa(p, best_cpu_isa()); }
int64_t equal_u16_host(const EqualU16Params& p) { return equal_u16_cpu_isa(p, best_cpu_isa()); }
void block_sums_host(const BlockSumsParams& p) { block_sums_cpu_isa(p, best_cpu_isa()); }
void buckets_host(const BucketsParams& p) { buckets_cpu_isa(p, best_cpu_isa()); }
void zero_below_host(const ZeroBelowParams& p) { zero_below_cpu_isa(p, best_cpu_isa()); }

// One thread: a vocabulary's exps take tens of microseconds, about what
// waking the pool costs.
double exp_scaled_cpu_isa(const ExpScaledParams& p, CpuIsa isa) {
  MSTAR_ASSERT(cpu_supports(isa), "exp_scaled_cpu_isa: this processor lacks the instruction set");
  return bodies(isa).exp_scaled_span(p.x, p.n, p.shift, p.scale, p.out);
}

MaxFound max_cpu_isa(const MaxParams& p, CpuIsa isa) {
  MSTAR_ASSERT(cpu_supports(isa), "max_cpu_isa: this processor lacks the instruction set");
  MaxFound f;
  f.value = bodies(isa).max_span(p.x, p.n, &f.index, &f.finite);
  return f;
}

int64_t at_least_cpu_isa(const AtLeastParams& p, CpuIsa isa) {
  MSTAR_ASSERT(cpu_supports(isa), "at_least_cpu_isa: this processor lacks the instruction set");
  return bodies(isa).at_least_span(p.x, p.n, p.floor, p.ids);
}

int64_t equal_u16_cpu_isa(const EqualU16Params& p, CpuIsa isa) {
  MSTAR_ASSERT(cpu_supports(isa), "equal_u16_cpu_isa: this processor lacks the instruction set");
  return bodies(isa).equal_u16_span(p.x, p.n, p.value, p.ids);
}

void block_sums_cpu_isa(const BlockSumsParams& p, CpuIsa isa) {
  MSTAR_ASSERT(cpu_supports(isa), "block_sums_cpu_isa: this processor lacks the instruction set");
  MSTAR_ASSERT(p.block >= 1, "block_sums: blocks of at least one entry");
  const auto sum = bodies(isa).sum_f64_span;
  for (int64_t at = 0, b = 0; at < p.n; at += p.block, ++b) p.out[b] = sum(p.x + at, std::min(p.block, p.n - at));
}

void buckets_cpu_isa(const BucketsParams& p, CpuIsa isa) {
  MSTAR_ASSERT(cpu_supports(isa), "buckets_cpu_isa: this processor lacks the instruction set");
  bodies(isa).buckets_span(p.x, p.n, p.top, p.scale, p.last, p.out);
}

void zero_below_cpu_isa(const ZeroBelowParams& p, CpuIsa isa) {
  MSTAR_ASSERT(cpu_supports(isa), "zero_below_cpu_isa: this processor lacks the instruction set");
  bodies(isa).zero_below_span(p.x, p.n, p.floor, p.w);
}

void rmsnorm_cpu_isa(const RmsNormParams& p, CpuIsa isa) {
  MSTAR_ASSERT(cpu_supports(isa), "rmsnorm_cpu_isa: this processor lacks the instruction set");
  const auto row = bodies(isa).rmsnorm_row;
  parallel_for(threads_for(p.threads, p.rows * p.width), p.rows,
               [&](int64_t r, int) { row(p.x + r * p.width, p.w, p.eps, p.out + r * p.width, p.width); });
}

void silu_mul_cpu_isa(const SiluMulParams& p, CpuIsa isa) {
  MSTAR_ASSERT(cpu_supports(isa), "silu_mul_cpu_isa: this processor lacks the instruction set");
  const auto span = bodies(isa).silu_mul_span;
  parallel_for(threads_for(p.threads, p.n), (p.n + kSpan - 1) / kSpan, [&](int64_t t, int) {
    const int64_t at = t * kSpan;
    span(p.a + at, p.b + at, std::min(kSpan, p.n - at));
  });
}

// The reference's arithmetic exactly (double angles, double products), with
// cos and sin taken once per token and pair instead of once per head.
void rope_cpu(const RopeParams& p) {
  const int32_t half = p.head_dim / 2;
  parallel_for(threads_for(p.threads, p.tokens * p.heads * p.head_dim), p.tokens, [&](int64_t t, int) {
    thread_local std::vector<double> cs;  // [half, 2]: cos, sin of each rotated pair
    cs.resize(static_cast<size_t>(2 * half));
    for (int32_t s = 0; s < p.sections; ++s) {
      const RopeSection& sec = p.section[s];
      const auto pos = static_cast<double>(p.positions[t * p.sections + s]);
      for (int32_t i = 0; i < sec.count; ++i) {
        const double a = pos * sec.inv_freq[i];
        cs[static_cast<size_t>(2 * (sec.offset + i))] = std::cos(a);
        cs[static_cast<size_t>(2 * (sec.offset + i) + 1)] = std::sin(a);
      }
    }
    for (int32_t h = 0; h < p.heads; ++h) {
      float* x = p.x + t * p.token_stride + h * p.head_stride;
      for (int32_t s = 0; s < p.sections; ++s)
        for (int32_t i = p.section[s].offset; i < p.section[s].offset + p.section[s].count; ++i) {
          const double c = cs[static_cast<size_t>(2 * i)], sn = cs[static_cast<size_t>(2 * i + 1)];
          const double x1 = x[i], x2 = x[half + i];
          x[i] = static_cast<float>(x1 * c - x2 * sn);
          x[half + i] = static_cast<float>(x1 * sn + x2 * c);
        }
    }
  });
}

}  // namespace mstar::kernels

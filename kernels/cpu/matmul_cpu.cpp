// The cpu backend's matrix product: panels for few rows, packed tiles for
// many (matmul_cpu.h says why), both spread over the pool's threads by output
// columns, so every thread reads a disjoint share of the weights.
#include "cpu/matmul_cpu.h"

#include <algorithm>
#include <vector>

#include "core/errors.h"
#include "cpu/thread_pool.h"

namespace mstar::kernels {

namespace {

struct Bodies {
  void (*panel)(const MatmulParams&, int64_t, int64_t);
  int64_t (*packed_cols)();
  void (*packed)(const MatmulParams&, int64_t, int64_t, float*);
};

Bodies bodies(CpuIsa isa) {
#if defined(__x86_64__)
  if (isa == CpuIsa::avx2) return {&avx2::matmul_panel, &avx2::matmul_packed_cols, &avx2::matmul_packed};
  if (isa == CpuIsa::avx512 || isa == CpuIsa::avx512_bf16)
    return {&avx512::matmul_panel, &avx512::matmul_packed_cols, &avx512::matmul_packed};
#endif
  (void)isa;
  return {&generic::matmul_panel, &generic::matmul_packed_cols, &generic::matmul_packed};
}

}  // namespace

void matmul_cpu(const MatmulParams& p) { matmul_cpu_path(p, best_cpu_isa(), matmul_path(p.rows)); }

void matmul_cpu_path(const MatmulParams& p, CpuIsa isa, MatmulPath path) {
  MSTAR_ASSERT(cpu_supports(isa), "matmul_cpu_path: this processor lacks the instruction set");
  MSTAR_ASSERT(p.w_dtype == DType::f32 || p.w_dtype == DType::f16 || p.w_dtype == DType::bf16,
               "matmul_cpu_path: weights are f32, f16 or bf16");
  const Bodies b = bodies(isa);
  if (path == MatmulPath::packed) {
    const int64_t cols = b.packed_cols();
    parallel_for(p.threads, (p.out + cols - 1) / cols, [&](int64_t t, int) {
      thread_local std::vector<float> packed;  // [in, cols], kept between calls
      packed.resize(static_cast<size_t>(p.in * cols));
      const int64_t o0 = t * cols;
      b.packed(p, o0, std::min(cols, p.out - o0), packed.data());
    });
    return;
  }
  parallel_for(p.threads, (p.out + kPanelCols - 1) / kPanelCols, [&](int64_t t, int) {
    const int64_t o0 = t * kPanelCols;
    b.panel(p, o0, std::min(kPanelCols, p.out - o0));
  });
}

}  // namespace mstar::kernels

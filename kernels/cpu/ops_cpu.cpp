// The cpu backend's matrix product: OpenBLAS sgemm on f32 weights; weights
// stored narrower are widened a block of rows at a time first.
#include <cblas.h>

#include <algorithm>
#include <vector>

#include "ops.h"

namespace mstar::kernels {

namespace {

// OpenBLAS's own threads and the kernels' OpenMP threads contend for the
// same cores: with both at 2 threads on 2 cores, the TTS demo ran 5x slower
// (13.8 s against 2.8 s, `mstar-run configs/tts-demo.yaml`). The models'
// matrices are small enough that one BLAS thread wins, and it keeps a run's
// numbers independent of the thread count.
void single_threaded_blas() {
  static const bool once = (openblas_set_num_threads(1), true);
  (void)once;
}

void sgemm(const MatmulParams& p, const float* w, int64_t out0, int64_t out_n, float beta) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(p.rows), static_cast<int>(out_n),
              static_cast<int>(p.in), 1.0f, p.x, static_cast<int>(p.x_stride), w, static_cast<int>(p.in), beta,
              p.y + out0, static_cast<int>(p.y_stride));
}

}  // namespace

void matmul_cpu(const MatmulParams& p) {
  single_threaded_blas();
  const float beta = p.accumulate ? 1.0f : 0.0f;
  if (p.w_dtype == DType::f32) {
    sgemm(p, static_cast<const float*>(p.w), 0, p.out, beta);
  } else {
    constexpr int64_t kBlock = 64;  // output rows widened at a time
    std::vector<float> wf(static_cast<size_t>(kBlock * p.in));
    for (int64_t o0 = 0; o0 < p.out; o0 += kBlock) {
      const int64_t n = std::min(kBlock, p.out - o0);
      for (int64_t i = 0; i < n * p.in; ++i)
        wf[static_cast<size_t>(i)] = load_as_f32(p.w, p.w_dtype, static_cast<size_t>(o0 * p.in + i));
      sgemm(p, wf.data(), o0, n, beta);
    }
  }
  if (p.bias)
    for (int64_t r = 0; r < p.rows; ++r)
      for (int64_t o = 0; o < p.out; ++o) p.y[r * p.y_stride + o] += p.bias[o];
}

}  // namespace mstar::kernels

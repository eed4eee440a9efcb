#include "models/ops.h"

#include <cblas.h>

#include <cmath>

#include "core/errors.h"

namespace mstar::ops {

void use_single_threaded_blas() { openblas_set_num_threads(1); }

void matmul(Backend b, const MatmulArgs& a) {
  if (a.rows == 0 || a.out == 0) return;
  if (b == Backend::cpu) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(a.rows), static_cast<int>(a.out),
                static_cast<int>(a.in), 1.0f, a.x, static_cast<int>(a.in), a.w, static_cast<int>(a.in),
                a.accumulate ? 1.0f : 0.0f, a.y, static_cast<int>(a.out));
    return;
  }
  MSTAR_ASSERT(b == Backend::reference, "matmul: backend without a matrix product");
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t o = 0; o < a.out; ++o) {
      double s = 0;
      for (int64_t i = 0; i < a.in; ++i) s += static_cast<double>(a.x[r * a.in + i]) * a.w[o * a.in + i];
      a.y[r * a.out + o] = static_cast<float>(s + (a.accumulate ? a.y[r * a.out + o] : 0.0));
    }
}

void rmsnorm(const float* x, int64_t rows, int64_t width, const float* w, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < width; ++i) ss += static_cast<double>(x[r * width + i]) * x[r * width + i];
    const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(width) + 1e-6));
    for (int64_t i = 0; i < width; ++i) out[r * width + i] = x[r * width + i] * inv * w[i];
  }
}

void silu_mul(float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) a[i] = a[i] / (1.0f + std::exp(-a[i])) * b[i];
}

}  // namespace mstar::ops

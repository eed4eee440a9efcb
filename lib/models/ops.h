#pragma once
// The models' building blocks on the host, f32. Matrix products go through
// OpenBLAS on the cpu backend and through plain loops on the reference
// backend, so the two can be compared.
#include <cstdint>

#include "backend.h"

namespace mstar::ops {

// y[rows, out] = x[rows, in] . w[out, in]^T (+ y when accumulate).
struct MatmulArgs {
  const float* x;
  int64_t rows, in;
  const float* w;
  int64_t out;
  float* y;
  bool accumulate = false;
};
void matmul(Backend b, const MatmulArgs& a);

// OpenBLAS's own threads and the attention kernels' OpenMP threads contend
// for the same cores: with both at 2 threads on 2 cores, the TTS demo ran 5x
// slower (13.8 s against 2.8 s, `mstar-run configs/tts-demo.yaml`). The
// models' matrices are small enough that one BLAS thread wins, and it makes
// a run's numbers independent of the thread count.
void use_single_threaded_blas();

// out[r] = x[r] / rms(x[r]) * w, eps 1e-6.
void rmsnorm(const float* x, int64_t rows, int64_t width, const float* w, float* out);
// a = silu(a) * b, elementwise over n.
void silu_mul(float* a, const float* b, int64_t n);

}  // namespace mstar::ops

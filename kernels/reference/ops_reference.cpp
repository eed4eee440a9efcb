// The reference matrix product: plain loops in double, the oracle the cpu
// and cuda products are tested against.
#include "ops.h"

namespace mstar::kernels {

void matmul_reference(const MatmulParams& p) {
  for (int64_t r = 0; r < p.rows; ++r)
    for (int64_t o = 0; o < p.out; ++o) {
      double s = 0;
      const float* x = p.x + r * p.x_stride;
      for (int64_t i = 0; i < p.in; ++i)
        s += static_cast<double>(x[i]) * load_as_f32(p.w, p.w_dtype, static_cast<size_t>(o * p.in + i));
      if (p.bias) s += p.bias[o];
      float& y = p.y[r * p.y_stride + o];
      y = static_cast<float>(s + (p.accumulate ? y : 0.0));
    }
}

}  // namespace mstar::kernels

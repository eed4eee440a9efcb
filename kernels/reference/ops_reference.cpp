// The reference trunk ops: plain loops (the products and norms in double),
// the oracle the cpu and cuda backends are tested against.
#include <cmath>
#include <numbers>
#include <vector>

#include "kernels/ops.h"
#include "kernels/rope.h"

namespace mstar::kernels {

// Row-major weights of any dtype are read a row at a time through the
// type's to_f32 (a block type included); pair panels element by element.
void matmul_reference(const MatmulParams& p) {
  std::vector<float> row(static_cast<std::size_t>(p.in));  // [in]: weight row o as f32
  std::vector<float> xs(static_cast<std::size_t>(p.rows * p.in));  // [rows, in]: x as the product reads it
  for (int64_t r = 0; r < p.rows; ++r) activations_as_read(p, r, xs.data() + r * p.in);
  for (int64_t o = 0; o < p.out; ++o) {
    if (p.w_layout == WeightLayout::rows)
      dtype_traits(p.w_dtype).to_f32(static_cast<const unsigned char*>(p.w) + row_bytes(p.w_dtype, o * p.in),
                                     row.data(), p.in);
    else
      for (int64_t i = 0; i < p.in; ++i)
        row[static_cast<std::size_t>(i)] = matrix_element(p.w, p.w_dtype, p.w_layout, p.out, p.in, o, i);
    for (int64_t r = 0; r < p.rows; ++r) {
      double s = 0;
      const float* x = xs.data() + r * p.in;
      for (int64_t i = 0; i < p.in; ++i) s += static_cast<double>(x[i]) * row[static_cast<std::size_t>(i)];
      if (p.bias) s += p.bias[o];
      float& y = p.y[r * p.y_stride + o];
      y = static_cast<float>(s + (p.accumulate ? y : 0.0));
    }
  }
}

void rmsnorm_reference(const RmsNormParams& p) {
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* x = p.x + r * p.width;
    double ss = 0;
    for (int64_t i = 0; i < p.width; ++i) ss += static_cast<double>(x[i]) * x[i];
    const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(p.width) + p.eps));
    float* out = p.out + r * p.width;
    for (int64_t i = 0; i < p.width; ++i) out[i] = x[i] * inv * p.w[i];
  }
}

void silu_mul_reference(const SiluMulParams& p) {
  for (int64_t i = 0; i < p.n; ++i) p.a[i] = p.a[i] / (1.0f + std::exp(-p.a[i])) * p.b[i];
}

void layer_norm_reference(const LayerNormParams& p) {
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* x = p.x + r * p.width;
    double sum = 0, ss = 0;
    for (int64_t i = 0; i < p.width; ++i) sum += x[i];
    const double mean = sum / static_cast<double>(p.width);
    for (int64_t i = 0; i < p.width; ++i) ss += (x[i] - mean) * (x[i] - mean);
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(p.width) + p.eps);
    float* out = p.out + r * p.width;
    for (int64_t i = 0; i < p.width; ++i)
      out[i] = static_cast<float>((x[i] - mean) * inv * (p.w ? p.w[i] : 1.0) + (p.bias ? p.bias[i] : 0.0));
  }
}

void activate_reference(const ActivateParams& p) {
  for (int64_t i = 0; i < p.n; ++i) {
    const double a = p.a[i];
    double y = 0;
    switch (p.act) {
      case Activation::silu: y = a / (1.0 + std::exp(-a)); break;
      case Activation::gelu: y = 0.5 * a * (1.0 + std::erf(a / std::sqrt(2.0))); break;
      case Activation::gelu_tanh:
        y = 0.5 * a * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (a + 0.044715 * a * a * a)));
        break;
    }
    p.a[i] = static_cast<float>(p.b ? y * p.b[i] : y);
  }
}

void rope_reference(const RopeParams& p) {
  const int32_t half = p.head_dim / 2;
  for (int64_t t = 0; t < p.tokens; ++t)
    for (int32_t h = 0; h < p.heads; ++h) {
      float* x = p.x + t * p.token_stride + h * p.head_stride;
      for (int32_t s = 0; s < p.sections; ++s) {
        const RopeSection& sec = p.section[s];
        rotate_pairs(x, sec.offset, half, sec.count, static_cast<double>(p.positions[t * p.sections + s]),
                     sec.inv_freq);
      }
    }
}

}  // namespace mstar::kernels

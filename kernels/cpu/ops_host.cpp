// The trunk's elementwise ops on the host, shared by the reference and cpu
// backends: each is a plain loop whose rounding the models' goldens were
// made with, so both backends stay bit-identical outside the products.
#include <cmath>
#include <cstring>

#include "ops.h"
#include "rope.h"

namespace mstar::kernels {

void rmsnorm_host(const RmsNormParams& p) {
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* x = p.x + r * p.width;
    double ss = 0;
    for (int64_t i = 0; i < p.width; ++i) ss += static_cast<double>(x[i]) * x[i];
    const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(p.width) + p.eps));
    float* out = p.out + r * p.width;
    for (int64_t i = 0; i < p.width; ++i) out[i] = x[i] * inv * p.w[i];
  }
}

void silu_mul_host(const SiluMulParams& p) {
  for (int64_t i = 0; i < p.n; ++i) p.a[i] = p.a[i] / (1.0f + std::exp(-p.a[i])) * p.b[i];
}

void rope_host(const RopeParams& p) {
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

void embed_host(const EmbedParams& p) {
  for (int64_t t = 0; t < p.tokens; ++t) {
    const auto row = static_cast<size_t>(p.ids[t]) * static_cast<size_t>(p.width);
    float* out = p.out + t * p.width;
    if (p.dtype == DType::f32) {
      std::memcpy(out, static_cast<const float*>(p.table) + row, static_cast<size_t>(p.width) * sizeof(float));
      continue;
    }
    for (int64_t i = 0; i < p.width; ++i) out[i] = load_as_f32(p.table, p.dtype, row + static_cast<size_t>(i));
  }
}

void gather_rows_host(const GatherRowsParams& p) {
  for (int64_t r = 0; r < p.rows; ++r)
    std::memcpy(p.out + r * p.width, p.x + static_cast<int64_t>(p.index[r]) * p.width,
                static_cast<size_t>(p.width) * sizeof(float));
}

void add_rows_host(const AddRowsParams& p) {
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* y = p.y + (r / p.group) * p.width;
    float* x = p.x + r * p.width;
    for (int64_t i = 0; i < p.width; ++i) x[i] += y[i];
  }
}

void lerp_host(const LerpParams& p) {
  for (int64_t i = 0; i < p.n; ++i) p.x[i] += (p.y[i] - p.x[i]) * p.s;
}

}  // namespace mstar::kernels

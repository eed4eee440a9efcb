#include "rope.h"

#include <cmath>

namespace mstar {

std::vector<float> rope_inv_freq(int32_t dims, double theta) {
  std::vector<float> f(static_cast<size_t>(dims / 2));
  for (int32_t i = 0; i < dims / 2; ++i)
    f[static_cast<size_t>(i)] = static_cast<float>(std::pow(theta, -2.0 * i / static_cast<double>(dims)));
  return f;
}

void rotate_pairs(float* x, int32_t offset, int32_t half, int32_t count, double pos, const float* inv_freq) {
  for (int32_t i = 0; i < count; ++i) {
    const double a = pos * inv_freq[i];
    const double c = std::cos(a), s = std::sin(a);
    const double x1 = x[offset + i], x2 = x[offset + half + i];
    x[offset + i] = static_cast<float>(x1 * c - x2 * s);
    x[offset + half + i] = static_cast<float>(x1 * s + x2 * c);
  }
}

void rotate_half(float* x, int32_t D, double pos, const float* inv_freq) {
  rotate_pairs(x, 0, D / 2, D / 2, pos, inv_freq);
}

}  // namespace mstar

#pragma once
// Shared test helpers: seeded random numbers and the naive oracle.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"

namespace mstar::test {

struct Rng {
  std::mt19937_64 gen;
  explicit Rng(uint64_t seed) : gen(seed) {}
  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen); }
  bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(gen); }
  float normal() { return std::normal_distribution<float>(0.0f, 1.0f)(gen); }
  std::vector<float> normals(size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = normal();
    return v;
  }
};

// Dense softmax attention of one query over explicit keys and values, in
// double: the oracle every path is compared with.
inline std::vector<float> naive_attention(const float* q, const std::vector<const float*>& keys,
                                          const std::vector<const float*>& values, int64_t D, double scale) {
  std::vector<float> out(static_cast<size_t>(D), 0.0f);
  if (keys.empty()) return out;
  std::vector<double> s(keys.size());
  double mx = -INFINITY;
  for (size_t j = 0; j < keys.size(); ++j) {
    double acc = 0;
    for (int64_t d = 0; d < D; ++d) acc += static_cast<double>(q[d]) * keys[j][d];
    s[j] = acc * scale;
    mx = std::max(mx, s[j]);
  }
  double den = 0;
  for (auto& x : s) den += (x = std::exp(x - mx));
  for (int64_t d = 0; d < D; ++d) {
    double acc = 0;
    for (size_t j = 0; j < keys.size(); ++j) acc += s[j] * values[j][d];
    out[static_cast<size_t>(d)] = static_cast<float>(acc / den);
  }
  return out;
}

// `count` elements (whole blocks) of block type dt (core/ggml_blocks.h):
// random bytes, each block's f16 scales then set to finite values near
// 1/64 of either sign (random bits could be an infinity or a NaN).
inline std::vector<unsigned char> random_blocks(Rng& rng, DType dt, int64_t count) {
  const DTypeTraits& d = dtype_traits(dt);
  std::vector<unsigned char> b(row_bytes(dt, count));
  for (auto& c : b) c = static_cast<unsigned char>(rng.uniform(0, 255));
  // Where each format keeps its scales in a block.
  const std::vector<int64_t> scales = dt == DType::q6_k                       ? std::vector<int64_t>{208}
                                      : dt == DType::q4_k || dt == DType::q5_k ? std::vector<int64_t>{0, 2}
                                                                               : std::vector<int64_t>{0};
  for (int64_t at = 0; at < static_cast<int64_t>(b.size()); at += d.block_bytes)
    for (int64_t s : scales) {
      const uint16_t h = f32_to_f16(static_cast<float>(rng.uniform(-64, 64)) / 4096.0f + 1.0f / 128);
      std::memcpy(b.data() + at + s, &h, 2);
    }
  return b;
}

inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = a.size() == b.size() ? 0.0f : INFINITY;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

}  // namespace mstar::test

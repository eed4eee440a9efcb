#pragma once
// Shared test helpers: seeded random numbers and the naive oracle.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

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

inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = a.size() == b.size() ? 0.0f : INFINITY;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

}  // namespace mstar::test

#include "models/transformer.h"

#include <cmath>

#include <fmt/format.h>

#include "models/ops.h"

namespace mstar {

Transformer::Transformer(const CommonArchitecture& arch, const Weights& w, Backend backend)
    : a_(arch), w_(w), backend_(backend == Backend::reference ? Backend::reference : Backend::cpu) {
  ops::use_single_threaded_blas();
}

void Transformer::run(std::vector<float>& x, int64_t n, const LayerAttention& attend) const {
  const int64_t W = a_.width, hd = a_.head_dim, qd = a_.heads * hd, kd = a_.kv_heads * hd;
  std::vector<float> h(static_cast<size_t>(n * W)), q(static_cast<size_t>(n * qd)), k(static_cast<size_t>(n * kd)),
      v(static_cast<size_t>(n * kd)), o(static_cast<size_t>(n * qd)), g(static_cast<size_t>(n * a_.mlp_width)),
      u(static_cast<size_t>(n * a_.mlp_width));
  for (int64_t l = 0; l < a_.layers; ++l) {
    const std::string p = fmt::format("layers.{}.", l);
    ops::rmsnorm(x.data(), n, W, w_.get(p + "attn_norm.weight"), h.data());
    ops::matmul(backend_, {h.data(), n, W, w_.get(p + "attn.q.weight"), qd, q.data()});
    ops::matmul(backend_, {h.data(), n, W, w_.get(p + "attn.k.weight"), kd, k.data()});
    ops::matmul(backend_, {h.data(), n, W, w_.get(p + "attn.v.weight"), kd, v.data()});
    attend(l, q.data(), k.data(), v.data(), o.data());
    ops::matmul(backend_, {o.data(), n, qd, w_.get(p + "attn.o.weight"), W, x.data(), true});
    ops::rmsnorm(x.data(), n, W, w_.get(p + "mlp_norm.weight"), h.data());
    ops::matmul(backend_, {h.data(), n, W, w_.get(p + "mlp.gate.weight"), a_.mlp_width, g.data()});
    ops::matmul(backend_, {h.data(), n, W, w_.get(p + "mlp.up.weight"), a_.mlp_width, u.data()});
    ops::silu_mul(g.data(), u.data(), n * a_.mlp_width);
    ops::matmul(backend_, {g.data(), n, a_.mlp_width, w_.get(p + "mlp.down.weight"), W, x.data(), true});
  }
}

void Transformer::final_norm(const std::vector<float>& x, int64_t n, std::vector<float>& out) const {
  out.resize(static_cast<size_t>(n * a_.width));
  ops::rmsnorm(x.data(), n, a_.width, w_.get("final_norm.weight"), out.data());
}

void dense_attention(const float* q, int64_t nq, const float* k, const float* v, int64_t nk, int64_t heads,
                     int64_t kv_heads, int64_t hd, const std::function<int64_t(int64_t)>& visible, float* o) {
  const int64_t group = heads / kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  std::vector<double> s(static_cast<size_t>(nk));
  for (int64_t i = 0; i < nq; ++i)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t kh = h / group, vis = std::min(visible(i), nk);
      const float* qi = q + (i * heads + h) * hd;
      float* oi = o + (i * heads + h) * hd;
      double mx = -INFINITY;
      for (int64_t j = 0; j < vis; ++j) {
        double d = 0;
        for (int64_t e = 0; e < hd; ++e) d += static_cast<double>(qi[e]) * k[(j * kv_heads + kh) * hd + e];
        s[static_cast<size_t>(j)] = d * scale;
        mx = std::max(mx, s[static_cast<size_t>(j)]);
      }
      double z = 0;
      for (int64_t j = 0; j < vis; ++j) z += (s[static_cast<size_t>(j)] = std::exp(s[static_cast<size_t>(j)] - mx));
      for (int64_t e = 0; e < hd; ++e) {
        double acc = 0;
        for (int64_t j = 0; j < vis; ++j) acc += s[static_cast<size_t>(j)] * v[(j * kv_heads + kh) * hd + e];
        oi[e] = vis > 0 ? static_cast<float>(acc / z) : 0.0f;
      }
    }
}

}  // namespace mstar

#pragma once
// The decoder trunk both model kinds share: per layer RMSNorm, q/k/v
// projections, attention (supplied by the caller: through a KV resource, or
// dense for a reference path), output projection and a SwiGLU MLP, each with
// a residual.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend.h"
#include "models/manifest.h"
#include "models/weights.h"

namespace mstar {

// Attention for one layer over the step's n tokens: q [n, heads, hd], k and v
// [n, kv_heads, hd] (unrotated: the callee applies positions), o [n, heads, hd].
using LayerAttention = std::function<void(int64_t layer, float* q, float* k, float* v, float* o)>;

class Transformer {
 public:
  Transformer(const CommonArchitecture& arch, const Weights& w, Backend backend);
  // x: [n, width], updated in place.
  void run(std::vector<float>& x, int64_t n, const LayerAttention& attend) const;
  // out[n, width] = final RMSNorm of x.
  void final_norm(const std::vector<float>& x, int64_t n, std::vector<float>& out) const;
  Backend backend() const { return backend_; }

 private:
  CommonArchitecture a_;
  const Weights& w_;
  Backend backend_;
};

// Dense softmax attention with grouped-query heads, for reference paths:
// query i sees keys [0, visible(i)); q [nq, heads, hd], k/v [nk, kv_heads, hd].
void dense_attention(const float* q, int64_t nq, const float* k, const float* v, int64_t nk, int64_t heads,
                     int64_t kv_heads, int64_t hd, const std::function<int64_t(int64_t)>& visible, float* o);

}  // namespace mstar

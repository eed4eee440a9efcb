#pragma once
// The decoder trunk every family composes from blocks: per layer a norm
// (RMS or layer norm, models/blocks/norm.h), q/k/v projections (with biases
// where the family has them), attention (supplied by the caller: through a
// KV resource, or dense for a test's oracle), the output projection, a norm
// and a feed-forward block (gated or plain, with the family's activation,
// models/blocks/feed_forward.h), each with a residual. Everything runs as
// kernel ops on the backend's buffers.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/backend.h"
#include "kernels/ops.h"
#include "models/architecture.h"
#include "models/blocks/norm.h"
#include "models/family.h"
#include "models/params.h"
#include "models/scratch.h"

namespace mstar {

// A family's tensor names for one layer; empty biases mean none, and a
// plain feed-forward block has no gate.
struct TrunkNames {
  std::string attn_norm, q, k, v, o, mlp_norm, gate, up, down;
  std::string q_bias, k_bias, v_bias;
  std::string attn_norm_bias, mlp_norm_bias;  // layer norms with a bias
};

// Attention for one layer over the step's n tokens, in the backend's memory:
// q [n, heads, hd], k and v [n, kv_heads, hd] (unrotated: the callee applies
// positions), o [n, heads, hd].
using LayerAttention = std::function<void(int64_t layer, float* q, float* k, float* v, float* o)>;

class Trunk {
 public:
  // matrix_dtype: the dtype products read the projection matrices in
  // (nullopt: as stored). final_norm_bias: empty where the final norm has none.
  Trunk(const TrunkShape& shape, ModelParams& params, const std::function<TrunkNames(int64_t)>& names,
        const std::string& final_norm, const std::string& final_norm_bias, std::optional<DType> matrix_dtype,
        const ModelOptions& options);

  // x: [n, width], backend memory, updated in place.
  void run(float* x, int64_t n, const LayerAttention& attend);
  // out[n, width] = the final norm of x.
  void final_norm(const float* x, int64_t n, float* out);
  // y[rows, out] (+)= x[rows, in] . w^T (+ bias) for any of the model's
  // matrices: w and bias must live as long as the model's weights (helpers
  // may read them after the call returns, until ~Trunk).
  // A matrix's weights as the products read them.
  struct Matrix {
    const void* w;  // [out, in], laid out as `layout` says
    DType dtype;
    kernels::WeightLayout layout = kernels::WeightLayout::rows;
  };
  void project(const float* x, int64_t rows, int64_t in, const Matrix& w, int64_t out, float* y,
               bool accumulate = false, const float* bias = nullptr);

  Backend backend() const { return options_.backend; }
  int threads() const { return options_.threads; }
  const TrunkShape& shape() const { return shape_; }

 private:
  struct Layer {
    Norm attn_norm, mlp_norm;
    Matrix q, k, v, o, gate, up, down;  // gate: a gated feed-forward block only
    const float *q_bias, *k_bias, *v_bias;
  };
  static const std::pair<Matrix Layer::*, std::string TrunkNames::*> kProjections[6];

  TrunkShape shape_;
  ModelOptions options_;
  // When the trunk goes, waits for pool helpers that may still read its
  // weights and biases (its products give
  // MatmulParams::weights_outlive_call): they are freed after the trunk.
  kernels::WeightsRelease release_;
  std::vector<Layer> layers_;
  Norm final_norm_;
  DeviceScratch scratch_;

  // The layer's feed-forward block over h [n, width]: its output in g [n,
  // mlp_width], u scratch of the same shape.
  void feed_forward(const Layer& L, const float* h, int64_t n, float* g, float* u);
  kernels::MatmulParams product(const float* x, int64_t rows, int64_t in, const Matrix& w, int64_t out, float* y,
                                bool accumulate, const float* bias) const;
};

}  // namespace mstar

#pragma once
// What a model family says about one model: its decoder trunk's shape, the
// tensors it expects (by the family's own names), and the facts the layers
// above derive from it (the resources' heads and head_dim, a speech model's
// vocabulary, a world model's frame size). Each family subclasses it.
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/blocks/feed_forward.h"
#include "models/blocks/norm.h"
#include "models/tensors.h"

namespace mstar {

// The decoder trunk's shape and the blocks it is composed of: per layer a
// norm, attention, a norm and a feed-forward block, each with a residual.
struct TrunkShape {
  int64_t layers = 0, width = 0, heads = 0, kv_heads = 0, head_dim = 0, mlp_width = 0;
  double norm_eps = 1e-6;
  bool qkv_bias = false;  // q, k and v projections add a bias
  NormKind norm = NormKind::rms;  // every layer's two norms and the final one
  bool norm_bias = false;         // a layer norm with a bias
  FeedForwardSpec mlp;            // SwiGLU unless a family says otherwise

  NormSpec norm_spec() const { return {norm, norm_eps, norm_bias}; }
};

class Architecture {
 public:
  virtual ~Architecture() = default;
  virtual const TrunkShape& trunk() const = 0;
  virtual std::vector<TensorSpec> tensors() const = 0;
  // The architecture as mstar-check shows it.
  virtual nlohmann::json to_json() const = 0;
  // Speech families: the token vocabulary; 0 for others.
  virtual int64_t vocab_size() const { return 0; }
  // Frame families: tokens in one frame; 0 for others.
  virtual int64_t tokens_per_frame() const { return 0; }
};

}  // namespace mstar

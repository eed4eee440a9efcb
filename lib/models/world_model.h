#pragma once
// The frame-rollout world model: each frame is tokens_per_frame latent tokens
// plus a per-frame control vector. A frame is made by denoise_steps passes
// that write the ring without committing (each attends to the ring plus the
// frame itself), then one pass over the clean frame that commits it.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "models/manifest.h"
#include "models/transformer.h"
#include "models/weights.h"
#include "resources/ring_kv/manager.h"

namespace mstar {

class WorldModel {
 public:
  WorldModel(const ModelManifest& m, const Weights& weights, Backend backend);

  const Architecture& arch() const { return arch_; }
  int64_t tokens_per_frame() const { return arch_.world.tokens_per_frame; }
  int64_t channels() const { return arch_.world.latent_channels; }

  // Attention for one pass at one layer: q [B*T, heads, hd], k/v [B*T,
  // kv_heads, hd] already rotated (3-D: time, height, width), o out.
  using FrameAttention = std::function<void(int64_t layer, const float* q, const float* k, const float* v, float* o)>;
  // Makes the attention for a pass; commit is true only for the last.
  using AttentionFactory = std::function<FrameAttention(bool commit)>;

  // One pass over B frames: latents [B, T, C], controls [B, control_dim],
  // noise level in [0, 1]; out gets the predicted clean latents [B, T, C].
  void pass(int64_t B, std::span<const int64_t> frame_pos, const float* latents, const float* controls, float noise,
            const FrameAttention& attend, std::vector<float>& out) const;

  // A whole frame for each row: starting from `noise` [B, T, C], denoise_steps
  // Euler passes toward the model's prediction, then the committing pass on
  // the clean frame. Returns the clean latents [B, T, C].
  std::vector<float> generate(int64_t B, std::span<const int64_t> frame_pos, const std::vector<float>& noise,
                              const float* controls, const AttentionFactory& attention) const;

  // Attention through the ring: upsert this pass's frames (committing or
  // not), then attend each row to its own session's visible slots.
  AttentionFactory ring_attention(RingKVManager& kv, const RingPlan& plan, std::span<const int64_t> frame_pos) const;

 private:
  void rotate(float* x, int64_t heads, int64_t frame, int64_t token) const;  // every head of one token

  Architecture arch_;
  const Weights& w_;
  Transformer trunk_;
  std::vector<float> inv_time_, inv_height_, inv_width_;
};

}  // namespace mstar

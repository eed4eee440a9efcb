#pragma once
// The "world" family: mstar's own small frame-rollout world model
// (docs/models.md). Each frame is tokens_per_frame latent tokens plus a
// per-frame control vector. A frame is made by denoise_steps passes that
// write the ring without committing (each attends to the ring plus the frame
// itself), then one pass over the clean frame that commits it.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "models/common_architecture.h"
#include "models/family.h"
#include "models/model.h"
#include "models/params.h"
#include "models/scratch.h"
#include "models/trunk.h"

namespace mstar {

struct WorldFields {
  int64_t latent_channels = 0;
  int64_t control_dim = 0;  // per-frame control vector
  int64_t frame_height = 0, frame_width = 0;
  int64_t tokens_per_frame = 0;  // frame_height * frame_width
  int64_t denoise_steps = 0;     // passes per frame; the last one commits
  // Rotary pairs given to time, height and width (sum: head_dim / 2).
  int64_t rope_time = 0, rope_height = 0, rope_width = 0;

  static constexpr auto fields() {
    using C = WorldFields;
    return std::make_tuple(
        field("latent_channels", &C::latent_channels, Need::required, "channels per latent token", Range{1, 1 << 16}),
        field("control_dim", &C::control_dim, Need::required, "entries of a frame's control vector", Range{0, 1 << 16}),
        field("frame_height", &C::frame_height, Need::required, "latent tokens down a frame", Range{1, 1 << 12}),
        field("frame_width", &C::frame_width, Need::required, "latent tokens across a frame", Range{1, 1 << 12}),
        field("tokens_per_frame", &C::tokens_per_frame, Need::required, "frame_height * frame_width",
              Range{1, 1 << 20}),
        field("denoise_steps", &C::denoise_steps, Need::required, "denoising passes per frame", Range{1, 1000}),
        field("rope_time", &C::rope_time, Need::required, "rotary pairs for time", Range{0, 512}),
        field("rope_height", &C::rope_height, Need::required, "rotary pairs for height", Range{0, 512}),
        field("rope_width", &C::rope_width, Need::required, "rotary pairs for width", Range{0, 512}));
  }
  bool operator==(const WorldFields&) const = default;
};

class WorldArchitecture final : public Architecture {
 public:
  WorldArchitecture(CommonArchitecture c, WorldFields w)
      : common(c), world(w), shape_(c.trunk()) {}
  const TrunkShape& trunk() const override { return shape_; }
  std::vector<TensorSpec> tensors() const override;
  nlohmann::json to_json() const override;
  int64_t tokens_per_frame() const override { return world.tokens_per_frame; }

  CommonArchitecture common;
  WorldFields world;

 private:
  TrunkShape shape_;
};

class WorldModel final : public FrameModel {
 public:
  WorldModel(const WorldArchitecture& arch, const Weights& weights, const ModelOptions& options);

  const Architecture& arch() const override { return arch_; }
  int64_t tokens_per_frame() const override { return arch_.world.tokens_per_frame; }
  int64_t channels() const override { return arch_.world.latent_channels; }
  int64_t control_dim() const override { return arch_.world.control_dim; }

  std::vector<float> generate(ResourceSet& kv, std::span<const int64_t> frame_pos, const std::vector<float>& noise,
                              const std::vector<float>& controls) override;

 private:
  // One pass over the B frames of `latents` ([B, T, C], backend memory) at
  // noise level `noise`: the predicted clean latents into `out`.
  void pass(ResourceSet& kv, int64_t B, const float* latents, const float* controls, float noise, bool commit,
            float* out);

  WorldArchitecture arch_;
  ModelOptions options_;
  ModelParams params_;
  Trunk trunk_;
  float *inv_time_, *inv_height_, *inv_width_;  // backend memory
  const int64_t* positions_ = nullptr;          // [B * T, 3]: the step's frame, row and column per token
  DeviceScratch scratch_;
};

ModelFamily world_family();

}  // namespace mstar

#include "models/world_model.h"

#include <cmath>
#include <cstring>

#include "core/errors.h"
#include "models/ops.h"
#include "rope.h"

namespace mstar {

WorldModel::WorldModel(const ModelManifest& m, const Weights& weights, Backend backend)
    : arch_(m.arch), w_(weights), trunk_(m.arch.common, weights, backend) {
  MSTAR_ASSERT(m.kind == ModelKind::world, "WorldModel needs a world manifest");
  const auto theta = static_cast<double>(m.arch.common.rope_theta);
  const auto& w = m.arch.world;
  inv_time_ = rope_inv_freq(static_cast<int32_t>(2 * w.rope_time), theta);
  inv_height_ = rope_inv_freq(static_cast<int32_t>(2 * w.rope_height), theta);
  inv_width_ = rope_inv_freq(static_cast<int32_t>(2 * w.rope_width), theta);
}

// 3-D rotary positions: the head's rotary pairs are split into time (the
// frame's clock), height and width (the token's place in the frame grid).
void WorldModel::rotate(float* x, int64_t heads, int64_t frame, int64_t token) const {
  const auto& w = arch_.world;
  const auto hd = static_cast<int32_t>(arch_.common.head_dim), half = hd / 2;
  const auto rt = static_cast<int32_t>(w.rope_time), rh = static_cast<int32_t>(w.rope_height),
             rw = static_cast<int32_t>(w.rope_width);
  const auto row = static_cast<double>(token / w.frame_width), col = static_cast<double>(token % w.frame_width);
  for (int64_t h = 0; h < heads; ++h) {
    float* v = x + h * hd;
    rotate_pairs(v, 0, half, rt, static_cast<double>(frame), inv_time_.data());
    rotate_pairs(v, rt, half, rh, row, inv_height_.data());
    rotate_pairs(v, rt + rh, half, rw, col, inv_width_.data());
  }
}

void WorldModel::pass(int64_t B, std::span<const int64_t> frame_pos, const float* latents, const float* controls,
                      float noise, const FrameAttention& attend, std::vector<float>& out) const {
  const auto& a = arch_.common;
  const auto& w = arch_.world;
  const int64_t T = w.tokens_per_frame, C = w.latent_channels, W = a.width, n = B * T;
  std::vector<float> x(static_cast<size_t>(n * W));
  ops::matmul(trunk_.backend(), {latents, n, C, w_.get("latent_in.weight"), W, x.data()});
  if (w.control_dim > 0) {
    std::vector<float> c(static_cast<size_t>(B * W));
    ops::matmul(trunk_.backend(), {controls, B, w.control_dim, w_.get("control_in.weight"), W, c.data()});
    for (int64_t t = 0; t < n; ++t)
      for (int64_t i = 0; i < W; ++i) x[static_cast<size_t>(t * W + i)] += c[static_cast<size_t>((t / T) * W + i)];
  }
  // The noise level, as a fixed sinusoid added to every token.
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < W; ++i)
      x[static_cast<size_t>(t * W + i)] += 0.1f * std::sin(noise * static_cast<float>(i + 1));
  const int64_t hd = a.head_dim;
  trunk_.run(x, n, [&](int64_t l, float* q, float* k, float* v, float* o) {
    for (int64_t t = 0; t < n; ++t) {
      const int64_t f = frame_pos[static_cast<size_t>(t / T)];
      rotate(q + t * a.heads * hd, a.heads, f, t % T);
      rotate(k + t * a.kv_heads * hd, a.kv_heads, f, t % T);  // the ring caches rotated keys
    }
    attend(l, q, k, v, o);
  });
  std::vector<float> normed;
  trunk_.final_norm(x, n, normed);
  out.resize(static_cast<size_t>(n * C));
  ops::matmul(trunk_.backend(), {normed.data(), n, W, w_.get("latent_out.weight"), C, out.data()});
}

std::vector<float> WorldModel::generate(int64_t B, std::span<const int64_t> frame_pos, const std::vector<float>& noise,
                                        const float* controls, const AttentionFactory& attention) const {
  const int64_t steps = arch_.world.denoise_steps;
  std::vector<float> x = noise, pred;
  for (int64_t s = 0; s < steps; ++s) {
    const float level = 1.0f - static_cast<float>(s) / static_cast<float>(steps);
    pass(B, frame_pos, x.data(), controls, level, attention(false), pred);
    const float step = 1.0f / static_cast<float>(steps - s);  // Euler toward the prediction; the last step lands on it
    for (size_t i = 0; i < x.size(); ++i) x[i] += (pred[i] - x[i]) * step;
  }
  pass(B, frame_pos, x.data(), controls, 0.0f, attention(true), pred);  // commits the clean frame
  return x;
}

WorldModel::AttentionFactory WorldModel::ring_attention(RingKVManager& kv, const RingPlan& plan,
                                                        std::span<const int64_t> frame_pos) const {
  return [this, &kv, &plan, frame_pos](bool commit) -> FrameAttention {
    return [this, &kv, &plan, frame_pos, commit](int64_t l, const float* q, const float* k, const float* v, float* o) {
      const auto& a = arch_.common;
      const int64_t T = arch_.world.tokens_per_frame, hd = a.head_dim, kvh = a.kv_heads;
      const auto B = static_cast<int64_t>(plan.session.size());
      // [B*T, kvh, hd] -> [B, kvh, T, hd], the ring's upsert layout.
      std::vector<float> kk(static_cast<size_t>(B * T * kvh * hd)), vv(kk.size());
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t)
          for (int64_t h = 0; h < kvh; ++h) {
            const size_t src = static_cast<size_t>(((b * T + t) * kvh + h) * hd);
            const size_t dst = static_cast<size_t>(((b * kvh + h) * T + t) * hd);
            std::memcpy(&kk[dst], k + src, static_cast<size_t>(hd) * sizeof(float));
            std::memcpy(&vv[dst], v + src, static_cast<size_t>(hd) * sizeof(float));
          }
      const RingUpsert up = kv.upsert(l, plan, f32_view(kk.data(), Shape{B, kvh, T, hd}),
                                      f32_view(vv.data(), Shape{B, kvh, T, hd}), frame_pos, UpsertOptions{commit, true});
      kv.attend(l, up, ConstTensorView{q, DType::f32, Shape{B * T, a.heads, hd}, Shape{a.heads * hd, hd, 1}, Device::cpu},
                f32_view(o, Shape{B * T, a.heads, hd}));
    };
  };
}

}  // namespace mstar

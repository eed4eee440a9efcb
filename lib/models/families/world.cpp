#include "models/families/world.h"

#include <cmath>

#include <fmt/format.h>

#include "core/errors.h"
#include "kernels/ops.h"
#include "kernels/rope.h"
#include "models/denoise.h"

namespace mstar {

namespace {

enum Use : int { kTime, kHeight, kWidth, kPos, kX, kPred, kLatents, kControls, kControlW, kNoise, kNormed, kOut };

std::unique_ptr<Architecture> read_world(ArchitectureInput& in) {
  MSTAR_ASSERT(in.fields, "the manifest reader hands an architecture block to a family that states one");
  FieldSource& src = *in.fields;
  CommonArchitecture c;
  WorldFields w;
  const bool common_ok = read_common_architecture(src, c);
  bool ok = read_declared(src, w) && common_ok;
  if (!ok) return nullptr;
  if (c.positions == "cache") {
    src.error("positions", fmt::format("{}: cache positions are offered for tts models (bounded KV) only",
                                       src.path("positions")));
    ok = false;
  }
  if (w.frame_height * w.frame_width != w.tokens_per_frame) {
    src.error("tokens_per_frame", fmt::format("{} {} must equal frame_height {} x frame_width {}",
                                              src.path("tokens_per_frame"), w.tokens_per_frame, w.frame_height,
                                              w.frame_width));
    ok = false;
  }
  if (c.head_dim % 2 != 0 || w.rope_time + w.rope_height + w.rope_width != c.head_dim / 2) {
    src.error("rope_time", fmt::format("{}: rope_time {} + rope_height {} + rope_width {} must equal head_dim / 2 = {} "
                                       "(head_dim {} must be even)",
                                       src.where(), w.rope_time, w.rope_height, w.rope_width, c.head_dim / 2,
                                       c.head_dim));
    ok = false;
  }
  if (!ok) return nullptr;
  return std::make_unique<WorldArchitecture>(c, w);
}

}  // namespace

std::vector<TensorSpec> WorldArchitecture::tensors() const {
  const auto& c = common;
  std::vector<TensorSpec> t;
  t.push_back({"latent_in.weight", {c.width, world.latent_channels}});
  if (world.control_dim > 0) t.push_back({"control_in.weight", {c.width, world.control_dim}});
  append_trunk_tensors(c, t);
  t.push_back({"latent_out.weight", {world.latent_channels, c.width}});
  return t;
}

nlohmann::json WorldArchitecture::to_json() const {
  nlohmann::json j = common_json(common);
  for_each_field<WorldFields>([&](const auto& d) { j[std::string(d.name)] = world.*(d.member); });
  return j;
}

WorldModel::WorldModel(const WorldArchitecture& arch, const Weights& weights, const ModelOptions& options)
    : arch_(arch),
      options_(options),
      params_(weights, options.backend),
      trunk_(arch.trunk(), params_, inhouse_names, "final_norm.weight", "", DType::f32, options),
      scratch_(allocator_for(options.backend)) {
  const auto theta = static_cast<double>(arch.common.rope_theta);
  const auto& w = arch.world;
  inv_time_ = scratch_.upload<float>(kTime, rope_inv_freq(static_cast<int32_t>(2 * w.rope_time), theta));
  inv_height_ = scratch_.upload<float>(kHeight, rope_inv_freq(static_cast<int32_t>(2 * w.rope_height), theta));
  inv_width_ = scratch_.upload<float>(kWidth, rope_inv_freq(static_cast<int32_t>(2 * w.rope_width), theta));
}

void WorldModel::pass(ResourceSet& kv, int64_t B, const float* latents, const float* controls, float noise,
                      bool commit, float* out) {
  const auto& a = arch_.common;
  const auto& w = arch_.world;
  const Backend b = options_.backend;
  const int64_t T = w.tokens_per_frame, C = w.latent_channels, W = a.width, n = B * T, hd = a.head_dim;
  float* x = scratch_.get<float>(kX, static_cast<size_t>(n * W));
  trunk_.project(latents, n, C, {params_.f32("latent_in.weight"), DType::f32}, W, x);
  if (w.control_dim > 0) {
    float* c = scratch_.get<float>(kControlW, static_cast<size_t>(B * W));
    trunk_.project(controls, B, w.control_dim, {params_.f32("control_in.weight"), DType::f32}, W, c);
    kernels::add_rows(b, {n, W, T, x, c});
  }
  // The noise level, as a fixed sinusoid added to every token.
  std::vector<float> level(static_cast<size_t>(W));
  for (int64_t i = 0; i < W; ++i) level[static_cast<size_t>(i)] = 0.1f * std::sin(noise * static_cast<float>(i + 1));
  kernels::add_rows(b, {n, W, n, x, scratch_.upload<float>(kNoise, level)});
  const Device dev = scratch_.allocator().device();
  trunk_.run(x, n, [&](int64_t l, float* q, float* k, float* v, float* o) {
    // 3-D rotary positions: the head's pairs split into time (the frame's
    // clock), height and width (the token's place in the frame grid).
    auto rot = [&](float* t, int64_t heads) {
      kernels::RopeParams p;
      p.tokens = n;
      p.heads = static_cast<int32_t>(heads);
      p.head_dim = static_cast<int32_t>(hd);
      p.x = t;
      p.token_stride = heads * hd;
      p.head_stride = hd;
      p.sections = 3;
      const auto rt = static_cast<int32_t>(w.rope_time), rh = static_cast<int32_t>(w.rope_height);
      p.section[0] = {0, rt, inv_time_};
      p.section[1] = {rt, rh, inv_height_};
      p.section[2] = {rt + rh, static_cast<int32_t>(w.rope_width), inv_width_};
      p.positions = positions_;
      p.threads = options_.threads;
      kernels::rope(b, p);
    };
    rot(q, a.heads);
    rot(k, a.kv_heads);  // the ring caches rotated keys
    auto [memory, local] = kv.attention(l);
    const Shape kv_shape{n, a.kv_heads, hd}, kv_strides{a.kv_heads * hd, hd, 1};
    const Shape q_shape{n, a.heads, hd}, q_strides{a.heads * hd, hd, 1};
    LayerPass pass;
    pass.q = ConstTensorView{q, DType::f32, q_shape, q_strides, dev};
    pass.k = ConstTensorView{k, DType::f32, kv_shape, kv_strides, dev};
    pass.v = ConstTensorView{v, DType::f32, kv_shape, kv_strides, dev};
    pass.out = TensorView{o, DType::f32, q_shape, q_strides, dev};
    pass.commit = commit;  // denoising passes write the scratch frame only
    memory.attend(local, pass);
  });
  float* normed = scratch_.get<float>(kNormed, static_cast<size_t>(n * W));
  trunk_.final_norm(x, n, normed);
  trunk_.project(normed, n, W, {params_.f32("latent_out.weight"), DType::f32}, C, out);
}

std::vector<float> WorldModel::generate(ResourceSet& kv, std::span<const int64_t> frame_pos,
                                        const std::vector<float>& noise, const std::vector<float>& controls) {
  const auto& w = arch_.world;
  const Backend b = options_.backend;
  const auto B = static_cast<int64_t>(frame_pos.size());
  const int64_t T = w.tokens_per_frame, C = w.latent_channels;
  const EulerSchedule schedule{w.denoise_steps};
  MSTAR_ASSERT(static_cast<int64_t>(noise.size()) == B * T * C, "noise is [B, T, C]");
  MSTAR_ASSERT(static_cast<int64_t>(controls.size()) == B * w.control_dim, "controls are [B, control_dim]");
  std::vector<int64_t> pos(static_cast<size_t>(B * T * 3));
  for (int64_t t = 0; t < B * T; ++t) {
    pos[static_cast<size_t>(3 * t)] = frame_pos[static_cast<size_t>(t / T)];
    pos[static_cast<size_t>(3 * t + 1)] = (t % T) / w.frame_width;
    pos[static_cast<size_t>(3 * t + 2)] = (t % T) % w.frame_width;
  }
  positions_ = scratch_.upload<int64_t>(kPos, pos);
  float* x = scratch_.upload<float>(kLatents, noise);
  const float* c = scratch_.upload<float>(kControls, controls);
  float* pred = scratch_.get<float>(kPred, noise.size());
  const int64_t numel = B * T * C;
  for (int64_t s = 0; s < schedule.steps; ++s) {
    pass(kv, B, x, c, schedule.level(s), false, pred);
    kernels::lerp(b, {numel, x, pred, schedule.step(s)});
  }
  pass(kv, B, x, c, EulerSchedule::kCleanLevel, true, pred);  // commits the clean frame
  std::vector<float> out(static_cast<size_t>(numel));
  scratch_.allocator().copy_to_host(out.data(), x, out.size() * sizeof(float));
  return out;
}

ModelFamily world_family() {
  ModelFamily f;
  f.name = "world";
  f.task = "frames";
  f.resource_type = "ring_kv";
  f.summary = "mstar's small frame-rollout world model (architecture stated in the manifest)";
  f.read_architecture = read_world;
  f.make = [](const Architecture& a, const Weights& w, const ModelOptions& o) -> std::unique_ptr<Model> {
    return std::make_unique<WorldModel>(dynamic_cast<const WorldArchitecture&>(a), w, o);
  };
  return f;
}

}  // namespace mstar

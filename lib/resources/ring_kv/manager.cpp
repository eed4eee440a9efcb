#include "resources/ring_kv/manager.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "ring_attention.h"

namespace mstar {

RingKVManager::RingKVManager(const RingKVSpec& spec, RingKVOptions options)
    : spec_((spec.config.validate(fmt::format("resource '{}'", spec.resource_key)), spec)),
      options_(options),
      book_(spec.config.num_sessions) {
  if (options_.threads < 1) throw ConfigError(fmt::format("ring_kv: threads must be at least 1, got {}", options_.threads));
  if (!backend_available(options_.backend))
    throw ConfigError(fmt::format("ring_kv: backend '{}' is not built into this binary", to_string(options_.backend)));
  const RingKVConfig& c = spec_.config;
  layers_.reserve(static_cast<size_t>(c.num_layers));
  for (const RingGeometry& g : c.layers)
    layers_.emplace_back(c.total_sessions(), c.num_kv_heads, g, c.head_dim, c.tokens_per_frame, c.dtype);
}

const LayerRingCache& RingKVManager::layer_at(int64_t l) const {
  if (l < 0 || l >= static_cast<int64_t>(layers_.size()))
    throw InputError(fmt::format("ring_kv: layer {} outside [0, {})", l, layers_.size()));
  return layers_[static_cast<size_t>(l)];
}

std::optional<int32_t> RingKVManager::session_of(const std::string& rid) const {
  const RingRequest* r = book_.find(rid);
  return r ? r->session : std::nullopt;
}

int32_t RingKVManager::held_session(const std::string& rid, const char* op) const {
  auto s = session_of(rid);
  if (!s) throw InputError(fmt::format("ring_kv: {} of request '{}', which holds no session", op, rid));
  return *s;
}

void RingKVManager::reset_request(const std::string& rid, OnReset /*what*/) {
  if (auto s = book_.release(rid))
    for (auto& l : layers_) l.reset(*s);
}

void RingKVManager::remove_request(const std::string& rid) {
  if (auto s = book_.remove(rid))
    for (auto& l : layers_) l.reset(*s);
}

RingUpsert RingKVManager::upsert(int64_t layer, const RingPlan& plan, ConstTensorView k, ConstTensorView v,
                                 std::span<const int64_t> frame_pos, const UpsertOptions& options) {
  layer_at(layer);
  const RingKVConfig& c = spec_.config;
  const auto B = static_cast<int64_t>(plan.session.size());
  const Shape want{B, c.num_kv_heads, c.tokens_per_frame, c.head_dim};
  for (const auto* x : {&k, &v})
    if (x->dtype != DType::f32 || !(x->shape == want) || !x->is_contiguous())
      throw InputError(fmt::format("ring_kv upsert: {} must be contiguous f32 {}, got {} {}", x == &k ? "k" : "v",
                                   want, x->dtype, x->shape));
  if (static_cast<int64_t>(frame_pos.size()) != B)
    throw InputError(fmt::format("ring_kv upsert: {} frame positions for {} rows", frame_pos.size(), B));
  // [B, H, T, D] for K and V into the cache's [2, H, B*T, D] layout.
  const int64_t H = c.num_kv_heads, T = c.tokens_per_frame, D = c.head_dim;
  std::vector<float> stacked(static_cast<size_t>(2 * H * B * T * D));
  for (int plane = 0; plane < 2; ++plane) {
    const auto* src = static_cast<const float*>(plane == 0 ? k.data : v.data);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        std::copy_n(src + ((b * H + h) * T) * D, T * D, stacked.begin() + ((plane * H + h) * B * T + b * T) * D);
  }
  return layers_[static_cast<size_t>(layer)].upsert(f32_view(stacked.data(), Shape{2, H, B * T, D}), frame_pos,
                                                    plan.session, options);
}

void RingKVManager::attend(int64_t layer, const RingUpsert& up, ConstTensorView q, TensorView out,
                           std::optional<float> scale) const {
  const LayerRingCache& lc = layer_at(layer);
  const RingKVConfig& c = spec_.config;
  const auto B = static_cast<int64_t>(up.span_lo.size());
  if (up.visible.size() != static_cast<size_t>(B * lc.total_slots()))
    throw InputError("ring_kv attend: the upsert result has no visibility rows (build_visibility was off)");
  if (q.shape.rank() != 3 || q.dtype != DType::f32 || q.shape[0] != B * c.tokens_per_frame || q.shape[2] != c.head_dim)
    throw InputError(fmt::format("ring_kv attend: q must be f32 [{}, Hq, {}], got {} {}", B * c.tokens_per_frame,
                                 c.head_dim, q.dtype, q.shape));
  if (!(out.shape == q.shape) || out.dtype != DType::f32)
    throw InputError(fmt::format("ring_kv attend: out must be f32 {}, got {} {}", q.shape, out.dtype, out.shape));
  if (q.strides[2] != 1 || out.strides[2] != 1) throw InputError("ring_kv attend: the head_dim axis must be contiguous");
  kernels::RingAttentionParams p;
  p.rows = static_cast<int32_t>(B);
  p.num_kv_heads = static_cast<int32_t>(c.num_kv_heads);
  p.num_q_heads = static_cast<int32_t>(q.shape[1]);
  p.head_dim = static_cast<int32_t>(c.head_dim);
  p.q_tokens = static_cast<int32_t>(c.tokens_per_frame);
  p.kv_dtype = c.dtype;
  p.scale = scale.value_or(1.0f / std::sqrt(static_cast<float>(c.head_dim)));
  p.threads = options_.threads;
  p.keys = up.keys.data;
  p.values = up.values.data;
  p.head_stride = up.keys.strides[0];
  p.total_slots = lc.total_slots();
  p.visible = up.visible.data();
  p.visible_row_stride = lc.total_slots();
  p.span_lo = up.span_lo.data();
  p.span_hi = up.span_hi.data();
  p.q = static_cast<const float*>(q.data);
  p.q_token_stride = q.strides[0];
  p.q_head_stride = q.strides[1];
  p.out = static_cast<float*>(out.data);
  p.out_token_stride = out.strides[0];
  p.out_head_stride = out.strides[1];
  kernels::ring_attention(options_.backend, p);
}

RingSessionState RingKVManager::get_state(const std::string& rid) const {
  const int32_t s = held_session(rid, "get_state");
  RingSessionState st;
  for (const auto& l : layers_) st.layers.push_back(l.copy_session(s));
  st.next_frame = book_.find(rid)->next_frame;
  return st;
}

void RingKVManager::load_state(const std::string& rid, const RingSessionState& state) {
  const int32_t s = held_session(rid, "load_state");
  if (state.layers.size() != layers_.size())
    throw InputError(fmt::format("ring_kv load_state: the state has {} layers but this ring has {}",
                                 state.layers.size(), layers_.size()));
  // Check every layer before writing any, so a refused state changes nothing.
  for (size_t l = 0; l < layers_.size(); ++l) {
    const LayerRingCache& lc = layers_[l];
    const Shape want{2, spec_.config.num_kv_heads, lc.capacity(), spec_.config.head_dim};
    const RingLayerState& ls = state.layers[l];
    if (!(ls.kv.shape() == want) || ls.kv.dtype() != spec_.config.dtype ||
        static_cast<int64_t>(ls.written.size()) != lc.capacity())
      throw InputError(fmt::format("ring_kv load_state: layer {}: the state is {} {} but a session of this ring is "
                                   "{} {}",
                                   l, ls.kv.dtype(), ls.kv.shape(), spec_.config.dtype, want));
  }
  for (size_t l = 0; l < layers_.size(); ++l) layers_[l].load_session(s, state.layers[l], static_cast<int64_t>(l));
  book_.set_clock(rid, state.next_frame);
}

void RingKVManager::post_warmup_validate() const {
  for (int32_t s = 0; s < static_cast<int32_t>(num_sessions()); ++s) {
    if (book_.held(s)) continue;
    for (size_t l = 0; l < layers_.size(); ++l)
      if (!layers_[l].is_pristine(s))
        throw StateError(fmt::format("ring_kv: layer {}, session {}: held by no request but not as reset left it",
                                     l, s));
  }
}

std::size_t RingKVManager::memory_bytes() const {
  std::size_t b = 0;
  for (const auto& l : layers_) b += l.memory_bytes();
  return b;
}

}  // namespace mstar

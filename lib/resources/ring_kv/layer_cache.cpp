#include "resources/ring_kv/layer_cache.h"

#include <algorithm>
#include <cstring>

#include "core/errors.h"

namespace mstar {

LayerRingCache::LayerRingCache(int64_t total_sessions, int64_t n_kv_heads, const RingGeometry& geometry,
                               int64_t head_dim, int64_t tokens_per_frame, DType dtype)
    : sessions_(total_sessions),
      H_(n_kv_heads),
      D_(head_dim),
      T_(tokens_per_frame),
      geo_(geometry),
      dtype_(dtype),
      kv_(dtype, Shape{2, n_kv_heads, total_sessions * (geometry.ring_frames + 1) * tokens_per_frame, head_dim}),
      written_(static_cast<size_t>(total_slots()), 0) {
  for (int64_t s = 0; s < sessions_; ++s) reset(s);
}

std::pair<int64_t, int64_t> LayerRingCache::session_span(int64_t session) const {
  MSTAR_ASSERT(session >= 0 && session < sessions_, fmt::format("session {} outside [0, {})", session, sessions_));
  return {session * capacity(), (session + 1) * capacity()};
}

void LayerRingCache::reset(int64_t session) {
  const auto [lo, hi] = session_span(session);
  const std::size_t es = dtype_size(dtype_);
  auto* base = static_cast<unsigned char*>(kv_.data());
  for (int64_t plane_head = 0; plane_head < 2 * H_; ++plane_head)
    std::memset(base + (plane_head * total_slots() + lo) * D_ * static_cast<int64_t>(es), 0,
                static_cast<std::size_t>((hi - lo) * D_) * es);
  std::fill(written_.begin() + lo, written_.begin() + hi, 0);
  // The scratch frame always counts as written: it holds the current frame.
  const int64_t scratch = frame_start(session, geo_.ring_frames);
  std::fill(written_.begin() + scratch, written_.begin() + scratch + T_, 1);
}

void LayerRingCache::store_frame(const float* kv_rows, int64_t b, int64_t B, int64_t dst_slot) {
  // kv_rows is [2, H, B*T, D]; the buffer is [2, H, total_slots, D].
  for (int64_t plane = 0; plane < 2; ++plane)
    for (int64_t h = 0; h < H_; ++h)
      for (int64_t t = 0; t < T_; ++t) {
        const float* src = kv_rows + ((plane * H_ + h) * B * T_ + b * T_ + t) * D_;
        const int64_t dst = ((plane * H_ + h) * total_slots() + dst_slot + t) * D_;
        for (int64_t d = 0; d < D_; ++d) store_from_f32(kv_.data(), dtype_, static_cast<size_t>(dst + d), src[d]);
      }
}

RingUpsert LayerRingCache::upsert(ConstTensorView kv, std::span<const int64_t> frame_pos,
                                  std::span<const int32_t> session, const UpsertOptions& options) {
  const auto B = static_cast<int64_t>(frame_pos.size());
  if (static_cast<int64_t>(session.size()) != B)
    throw InputError(fmt::format("ring upsert: {} frame positions for {} sessions", B, session.size()));
  const Shape want{2, H_, B * T_, D_};
  if (kv.dtype != DType::f32 || !(kv.shape == want) || !kv.is_contiguous())
    throw InputError(fmt::format("ring upsert: kv must be contiguous f32 {}, got {} {}", want, kv.dtype, kv.shape));
  RingUpsert out;
  out.keys = keys();
  out.values = values();
  if (options.build_visibility) out.visible.assign(static_cast<size_t>(B * total_slots()), 0);
  const auto* rows = static_cast<const float*>(kv.data);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t s = session[static_cast<size_t>(b)], f = frame_pos[static_cast<size_t>(b)];
    if (s < 0 || s >= sessions_) throw InputError(fmt::format("ring upsert: row {} names session {} of {}", b, s, sessions_));
    if (f < 0) throw InputError(fmt::format("ring upsert: row {} has negative frame position {}", b, f));
    const auto [lo, hi] = session_span(s);
    out.span_lo.push_back(lo);
    out.span_hi.push_back(hi);
    store_frame(rows, b, B, frame_start(s, geo_.ring_frames));  // always the scratch frame first

    const int64_t d = geo_.pinned_dilation;
    const int64_t bucket = (f + d - 1) / d;  // ceil(f / d)
    const int64_t ring = frame_start(s, bucket % geo_.ring_buckets);
    const bool write_step = f % d == 0;
    if (options.build_visibility) {
      uint8_t* vis = out.visible.data() + b * total_slots();
      for (int64_t i = lo; i < hi; ++i) vis[i] = written_[static_cast<size_t>(i)];
      // The slot this frame is about to overwrite holds the frame leaving the horizon.
      if (write_step) std::fill(vis + ring, vis + ring + T_, 0);
    }
    if (options.commit && write_step) {
      store_frame(rows, b, B, ring);
      std::fill(written_.begin() + ring, written_.begin() + ring + T_, 1);
    }
  }
  return out;
}

RingLayerState LayerRingCache::copy_session(int64_t session) const {
  const auto [lo, hi] = session_span(session);
  RingLayerState st{HostBuffer(dtype_, Shape{2, H_, capacity(), D_}),
                    std::vector<uint8_t>(written_.begin() + lo, written_.begin() + hi)};
  const auto es = static_cast<int64_t>(dtype_size(dtype_));
  for (int64_t ph = 0; ph < 2 * H_; ++ph)
    std::memcpy(static_cast<unsigned char*>(st.kv.data()) + ph * capacity() * D_ * es,
                static_cast<const unsigned char*>(kv_.data()) + (ph * total_slots() + lo) * D_ * es,
                static_cast<size_t>(capacity() * D_ * es));
  return st;
}

void LayerRingCache::load_session(int64_t session, const RingLayerState& state, int64_t layer) {
  const Shape want{2, H_, capacity(), D_};
  if (!(state.kv.shape() == want) || state.kv.dtype() != dtype_ ||
      static_cast<int64_t>(state.written.size()) != capacity())
    throw InputError(fmt::format("ring load_state: layer {}: the state is {} {} with {} flags, but a session of this "
                                 "ring is {} {} with {}",
                                 layer, state.kv.dtype(), state.kv.shape(), state.written.size(), dtype_, want,
                                 capacity()));
  const int64_t lo = session_span(session).first;
  const auto es = static_cast<int64_t>(dtype_size(dtype_));
  for (int64_t ph = 0; ph < 2 * H_; ++ph)
    std::memcpy(static_cast<unsigned char*>(kv_.data()) + (ph * total_slots() + lo) * D_ * es,
                static_cast<const unsigned char*>(state.kv.data()) + ph * capacity() * D_ * es,
                static_cast<size_t>(capacity() * D_ * es));
  std::copy(state.written.begin(), state.written.end(), written_.begin() + lo);
}

bool LayerRingCache::is_pristine(int64_t session) const {
  const auto [lo, hi] = session_span(session);
  const int64_t scratch = frame_start(session, geo_.ring_frames);
  for (int64_t i = lo; i < hi; ++i)
    if (written_[static_cast<size_t>(i)] != (i >= scratch ? 1 : 0)) return false;
  const auto es = static_cast<int64_t>(dtype_size(dtype_));
  const auto* base = static_cast<const unsigned char*>(kv_.data());
  for (int64_t ph = 0; ph < 2 * H_; ++ph) {
    const unsigned char* p = base + (ph * total_slots() + lo) * D_ * es;
    if (std::any_of(p, p + (hi - lo) * D_ * es, [](unsigned char c) { return c != 0; })) return false;
  }
  return true;
}

ConstTensorView LayerRingCache::keys() const {
  return ConstTensorView{kv_.data(), dtype_, Shape{H_, total_slots(), D_}, Shape{total_slots() * D_, D_, 1},
                         Device::cpu};
}

ConstTensorView LayerRingCache::values() const {
  const auto* base = static_cast<const unsigned char*>(kv_.data()) +
                     H_ * total_slots() * D_ * static_cast<int64_t>(dtype_size(dtype_));
  return ConstTensorView{base, dtype_, Shape{H_, total_slots(), D_}, Shape{total_slots() * D_, D_, 1}, Device::cpu};
}

}  // namespace mstar

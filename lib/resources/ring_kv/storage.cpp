#include "resources/ring_kv/storage.h"

#include <cmath>

#include <fmt/format.h>

#include "core/errors.h"

namespace mstar {

RingKVStorage::RingKVStorage(const RingKVConfig& config, const ResourceOptions& options)
    : config_(config), options_(options), alloc_(allocator_for(options.backend)) {
  layers_.reserve(static_cast<size_t>(config_.num_layers));
  for (int64_t l = 0; l < config_.num_layers; ++l) layers_.emplace_back(alloc_, config_.layer_bytes(l));
  staged_.resize(static_cast<size_t>(config_.num_layers));
}

void RingKVStorage::check_layer(const char* op, int64_t layer) const {
  if (layer < 0 || layer >= config_.num_layers)
    throw InputError(fmt::format("ring_kv {}: layer {} outside [0, {})", op, layer, config_.num_layers));
}

void RingKVStorage::stage(const RingKVPlan& plan) {
  rows_ = static_cast<int64_t>(plan.session.size());
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    const RingKVPlan::Layer& pl = plan.layers[static_cast<size_t>(l)];
    // Checked on the host, once per step: the ops take the ranges on trust.
    kernels::check_ring_tables(pl.range_indptr, pl.ranges, pl.scratch_start, pl.ring_start, pl.span_lo, pl.span_hi,
                               config_.tokens_per_frame, config_.total_slots(l));
    StagedLayer& s = staged_[static_cast<size_t>(l)];
    s.scratch_start.host = pl.scratch_start;
    s.ring_start.host = pl.ring_start;
    s.range_indptr.host = pl.range_indptr;
    s.ranges.host = pl.ranges;
    s.scratch_start.upload(alloc_);
    s.ring_start.upload(alloc_);
    s.range_indptr.upload(alloc_);
    s.ranges.upload(alloc_);
  }
}

void RingKVStorage::upsert(int64_t layer, ConstTensorView k, ConstTensorView v, bool commit) {
  check_layer("upsert", layer);
  const RingKVConfig& c = config_;
  const Shape want{rows_ * c.tokens_per_frame, c.num_kv_heads, c.head_dim};
  for (const auto* x : {&k, &v})
    if (x->dtype != DType::f32 || !(x->shape == want) || x->strides[2] != 1 || x->device != alloc_.device())
      throw InputError(fmt::format("ring_kv upsert: {} must be f32 {} on {} with a contiguous head_dim, got {} {}",
                                   x == &k ? "k" : "v", want, to_string(alloc_.device()), x->dtype, x->shape));
  if (!(k.strides == v.strides)) throw InputError("ring_kv upsert: k and v must share strides");
  StagedLayer& s = staged_[static_cast<size_t>(layer)];
  kernels::RingUpsertParams p;
  p.rows = static_cast<int32_t>(rows_);
  p.num_kv_heads = static_cast<int32_t>(c.num_kv_heads);
  p.head_dim = static_cast<int32_t>(c.head_dim);
  p.tokens = static_cast<int32_t>(c.tokens_per_frame);
  p.kv_dtype = c.dtype;
  p.threads = options_.threads;
  p.kv = layers_[static_cast<size_t>(layer)].data();
  p.total_slots = c.total_slots(layer);
  p.k = static_cast<const float*>(k.data);
  p.v = static_cast<const float*>(v.data);
  p.token_stride = k.strides[0];
  p.head_stride = k.strides[1];
  p.scratch_start = s.scratch_start.upload(alloc_);
  p.ring_start = commit ? s.ring_start.upload(alloc_) : nullptr;
  kernels::ring_upsert(options_.backend, p);
}

void RingKVStorage::attend(int64_t layer, ConstTensorView q, TensorView out, std::optional<float> scale) {
  check_layer("attend", layer);
  const RingKVConfig& c = config_;
  if (q.shape.rank() != 3 || q.dtype != DType::f32 || q.shape[0] != rows_ * c.tokens_per_frame ||
      q.shape[2] != c.head_dim || q.strides[2] != 1 || q.device != alloc_.device())
    throw InputError(fmt::format("ring_kv attend: q must be f32 [{}, Hq, {}] on {} with a contiguous head_dim, got {} {}",
                                 rows_ * c.tokens_per_frame, c.head_dim, to_string(alloc_.device()), q.dtype, q.shape));
  if (!(out.shape == q.shape) || out.dtype != DType::f32 || out.strides[2] != 1)
    throw InputError(fmt::format("ring_kv attend: out must be f32 {}, got {} {}", q.shape, out.dtype, out.shape));
  StagedLayer& s = staged_[static_cast<size_t>(layer)];
  kernels::RingAttentionParams p;
  p.rows = static_cast<int32_t>(rows_);
  p.num_kv_heads = static_cast<int32_t>(c.num_kv_heads);
  p.num_q_heads = static_cast<int32_t>(q.shape[1]);
  p.head_dim = static_cast<int32_t>(c.head_dim);
  p.q_tokens = static_cast<int32_t>(c.tokens_per_frame);
  p.kv_dtype = c.dtype;
  p.scale = scale.value_or(1.0f / std::sqrt(static_cast<float>(c.head_dim)));
  p.threads = options_.threads;
  p.kv = layers_[static_cast<size_t>(layer)].data();
  p.total_slots = c.total_slots(layer);
  p.range_indptr = s.range_indptr.upload(alloc_);
  p.ranges = s.ranges.upload(alloc_);
  p.q = static_cast<const float*>(q.data);
  p.q_token_stride = q.strides[0];
  p.q_head_stride = q.strides[1];
  p.out = static_cast<float*>(out.data);
  p.out_token_stride = out.strides[0];
  p.out_head_stride = out.strides[1];
  kernels::ring_attention(options_.backend, p);
}

namespace {

// Calls f(buffer offset, session offset, bytes) for each contiguous run of a
// session in a layer: one per plane and head.
template <class F>
void session_runs(const RingKVConfig& c, int64_t layer, int32_t session, F&& f) {
  const auto es = static_cast<int64_t>(row_bytes(c.dtype, 1));
  const int64_t cap = c.capacity(layer), D = c.head_dim, total = c.total_slots(layer);
  for (int64_t ph = 0; ph < 2 * c.num_kv_heads; ++ph)
    f((ph * total + session * cap) * D * es, ph * cap * D * es, static_cast<std::size_t>(cap * D * es));
}

}  // namespace

void RingKVStorage::zero_session(int32_t session) {
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    auto* base = static_cast<unsigned char*>(layers_[static_cast<size_t>(l)].data());
    session_runs(config_, l, session, [&](int64_t at, int64_t, std::size_t bytes) { alloc_.fill_zero(base + at, bytes); });
  }
}

HostBuffer RingKVStorage::copy_session(int64_t layer, int32_t session) const {
  const RingKVConfig& c = config_;
  HostBuffer out(c.dtype, Shape{2, c.num_kv_heads, c.capacity(layer), c.head_dim});
  const auto* base = static_cast<const unsigned char*>(layers_[static_cast<size_t>(layer)].data());
  session_runs(c, layer, session, [&](int64_t at, int64_t to, std::size_t bytes) {
    alloc_.copy_to_host(static_cast<unsigned char*>(out.data()) + to, base + at, bytes);
  });
  return out;
}

void RingKVStorage::load_session(int64_t layer, int32_t session, const HostBuffer& kv) {
  auto* base = static_cast<unsigned char*>(layers_[static_cast<size_t>(layer)].data());
  session_runs(config_, layer, session, [&](int64_t at, int64_t from, std::size_t bytes) {
    alloc_.copy_from_host(base + at, static_cast<const unsigned char*>(kv.data()) + from, bytes);
  });
}

std::size_t RingKVStorage::memory_bytes() const {
  std::size_t b = 0;
  for (const DeviceBuffer& l : layers_) b += l.bytes();
  return b;
}

}  // namespace mstar

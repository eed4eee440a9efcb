#include "resources/bounded_kv/manager.h"

#include <cmath>

#include "core/errors.h"

namespace mstar {

namespace {

void expect_shape(const char* what, const BasicView<const void*>& v, Shape want) {
  if (v.dtype != DType::f32)
    throw InputError(fmt::format("bounded_kv attend: {} must be f32, got {}", what, v.dtype));
  if (!(v.shape == want))
    throw InputError(fmt::format("bounded_kv attend: {} has shape {}, expected {}", what, v.shape, want));
}

}  // namespace

BoundedKVManager::BoundedKVManager(const BoundedKVSpec& spec, BoundedKVOptions options)
    : spec_((spec.config.validate(fmt::format("resource '{}'", spec.resource_key)), spec)),
      options_(options),
      book_(spec.config) {
  if (options_.threads < 1) throw ConfigError(fmt::format("bounded_kv: threads must be at least 1, got {}", options_.threads));
  if (!backend_available(options_.backend))
    throw ConfigError(fmt::format("bounded_kv: backend '{}' is not built into this binary", to_string(options_.backend)));
  const BoundedKVConfig& c = spec_.config;
  layers_.reserve(static_cast<size_t>(c.num_layers));
  for (int64_t l = 0; l < c.num_layers; ++l)
    layers_.emplace_back(c.dtype, Shape{c.max_slots, c.rows_per_request, c.num_heads, c.slot_tokens(), 2 * c.head_dim});
}

void BoundedKVManager::register_source(int id, ConstTensorView keys, ConstTensorView values) {
  const BoundedKVConfig& c = spec_.config;
  if (keys.shape.rank() != 5)
    throw InputError(fmt::format("bounded_kv: source {} keys have shape {}, expected [num_layers, rows, H, len, D]",
                                 id, keys.shape));
  const int64_t len = keys.shape[3];
  const Shape want{c.num_layers, c.rows_per_request, c.num_heads, len, c.head_dim};
  for (const auto* v : {&keys, &values}) {
    if (v->dtype != DType::f32 || !(v->shape == want) || !v->is_contiguous())
      throw InputError(fmt::format("bounded_kv: source {} {} must be contiguous f32 {}, got {} {}", id,
                                   v == &keys ? "keys" : "values", want, v->dtype, v->shape));
  }
  book_.register_source(id, len);  // checks the id and the length
  HostBuffer buf(c.dtype, Shape{c.num_layers, c.rows_per_request, c.num_heads, len, 2 * c.head_dim});
  const auto* kf = static_cast<const float*>(keys.data);
  const auto* vf = static_cast<const float*>(values.data);
  const int64_t D = c.head_dim;
  const int64_t entries = want.numel() / D;  // (layer, row, head, token) tuples, same order in both layouts
  for (int64_t e = 0; e < entries; ++e)
    for (int64_t d = 0; d < D; ++d) {
      store_from_f32(buf.data(), c.dtype, static_cast<size_t>(e * 2 * D + d), kf[e * D + d]);
      store_from_f32(buf.data(), c.dtype, static_cast<size_t>(e * 2 * D + D + d), vf[e * D + d]);
    }
  sources_.emplace(id, std::move(buf));
}

void BoundedKVManager::remove_source(int id) {
  book_.remove_source(id);
  sources_.erase(id);
}

std::size_t BoundedKVManager::pool_bytes() const {
  std::size_t b = 0;
  for (const HostBuffer& l : layers_) b += l.bytes();
  return b;
}

std::size_t BoundedKVManager::source_bytes() const {
  std::size_t b = 0;
  for (const auto& [id, s] : sources_) b += s.bytes();
  return b;
}

void BoundedKVManager::attend(int64_t layer, const BoundedKVPlan& plan, const BoundedAttendArgs& args) {
  const BoundedKVConfig& c = spec_.config;
  if (layer < 0 || layer >= c.num_layers)
    throw InputError(fmt::format("bounded_kv attend: layer {} outside [0, {})", layer, c.num_layers));
  const auto rows = static_cast<int64_t>(plan.rows.size());
  if (static_cast<int64_t>(args.q_indptr.size()) != rows + 1)
    throw InputError(fmt::format("bounded_kv attend: q_indptr has {} entries for {} rows (expected {})",
                                 args.q_indptr.size(), rows, rows + 1));
  if (args.q.shape.rank() != 3)
    throw InputError(fmt::format("bounded_kv attend: q has shape {}, expected [total_q, Hq, D]", args.q.shape));
  const int64_t Hq = args.q.shape[1];
  const int64_t total_q = args.q_indptr.empty() ? 0 : args.q_indptr.back();
  const int64_t total_kv = plan.kv_indptr.back();
  expect_shape("q", args.q, Shape{total_q, Hq, c.head_dim});
  expect_shape("k", args.k, Shape{total_kv, c.num_heads, c.head_dim});
  expect_shape("v", args.v, Shape{total_kv, c.num_heads, c.head_dim});
  const ConstTensorView out_c = args.out;
  expect_shape("out", out_c, Shape{total_q, Hq, c.head_dim});
  for (const auto* v : {&args.q, &args.k, &args.v, &out_c})
    if (v->strides[2] != 1) throw InputError("bounded_kv attend: the head_dim axis must be contiguous");

  // Per-row addresses at this layer: the kernels take pointers, not objects.
  std::vector<kernels::BoundedRowTable> tables(static_cast<size_t>(rows));
  std::vector<kernels::BoundedRowAddress> addr(static_cast<size_t>(rows));
  const std::size_t es = dtype_size(c.dtype);
  const int64_t slot_head_stride = c.slot_tokens() * 2 * c.head_dim;
  auto* pool = static_cast<unsigned char*>(layers_[static_cast<size_t>(layer)].data());
  for (int64_t r = 0; r < rows; ++r) {
    const auto ur = static_cast<size_t>(r);
    tables[ur] = plan.rows[ur].table;
    if (tables[ur].slot < 0) continue;
    const int64_t block = (tables[ur].slot * c.rows_per_request + plan.row_in_request[ur]) * c.num_heads;
    addr[ur].slot = pool + block * slot_head_stride * static_cast<int64_t>(es);
    addr[ur].slot_head_stride = slot_head_stride;
    if (plan.source_of_row[ur] >= 0) {
      auto it = sources_.find(plan.source_of_row[ur]);
      if (it == sources_.end())
        throw InputError(fmt::format("bounded_kv attend: row {} reads source {}, which is not registered", r,
                                     plan.source_of_row[ur]));
      const int64_t len = it->second.shape()[3];
      const int64_t sblock = (layer * c.rows_per_request + plan.row_in_request[ur]) * c.num_heads;
      addr[ur].source = static_cast<const unsigned char*>(it->second.data()) + sblock * len * 2 * c.head_dim * static_cast<int64_t>(es);
      addr[ur].source_head_stride = len * 2 * c.head_dim;
    }
  }

  kernels::BoundedAttentionParams p;
  p.rows = static_cast<int32_t>(rows);
  p.num_kv_heads = static_cast<int32_t>(c.num_heads);
  p.num_q_heads = static_cast<int32_t>(Hq);
  p.head_dim = static_cast<int32_t>(c.head_dim);
  p.kv_dtype = c.dtype;
  p.mask = args.mask;
  p.scale = args.scale.value_or(1.0f / std::sqrt(static_cast<float>(c.head_dim)));
  p.threads = options_.threads;
  if (!args.rope_inv_freq.empty()) {
    if (static_cast<int64_t>(args.rope_inv_freq.size()) * 2 != c.head_dim)
      throw InputError(fmt::format("bounded_kv attend: rope_inv_freq has {} entries for head_dim {}",
                                   args.rope_inv_freq.size(), c.head_dim));
    p.rope_inv_freq = args.rope_inv_freq.data();
  }
  p.table = tables.data();
  p.address = addr.data();
  p.q_indptr = args.q_indptr.data();
  p.kv_indptr = plan.kv_indptr.data();
  p.q = static_cast<const float*>(args.q.data);
  p.q_token_stride = args.q.strides[0];
  p.q_head_stride = args.q.strides[1];
  p.k = static_cast<const float*>(args.k.data);
  p.v = static_cast<const float*>(args.v.data);
  if (!(args.k.strides == args.v.strides)) throw InputError("bounded_kv attend: k and v must share strides");
  p.kv_token_stride = args.k.strides[0];
  p.kv_head_stride = args.k.strides[1];
  p.out = static_cast<float*>(args.out.data);
  p.out_token_stride = args.out.strides[0];
  p.out_head_stride = args.out.strides[1];
  kernels::bounded_attention(options_.backend, p);
}

}  // namespace mstar

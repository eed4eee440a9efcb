#include "resources/bounded_kv/storage.h"

#include <cmath>

#include <fmt/format.h>

#include "core/errors.h"

namespace mstar {

namespace {

void expect_shape(const char* op, const char* what, const ConstTensorView& v, Shape want) {
  if (v.dtype != DType::f32) throw InputError(fmt::format("bounded_kv {}: {} must be f32, got {}", op, what, v.dtype));
  if (!(v.shape == want))
    throw InputError(fmt::format("bounded_kv {}: {} has shape {}, expected {}", op, what, v.shape, want));
  if (v.strides.rank() != 3 || v.strides[2] != 1)
    throw InputError(fmt::format("bounded_kv {}: {}'s head_dim axis must be contiguous", op, what));
}

}  // namespace

BoundedKVStorage::BoundedKVStorage(const BoundedKVConfig& config, const ResourceOptions& options)
    : config_(config), options_(options), alloc_(allocator_for(options.backend)) {
  const BoundedKVConfig& c = config_;
  layers_.reserve(static_cast<size_t>(c.num_layers));
  for (int64_t l = 0; l < c.num_layers; ++l) layers_.emplace_back(alloc_, c.slot_bytes_per_layer() * static_cast<size_t>(c.max_slots));
}

void BoundedKVStorage::add_source(int id, int64_t len) {
  const BoundedKVConfig& c = config_;
  MSTAR_ASSERT(!sources_.count(id), "add_source: the book registers each id once");
  const std::size_t bytes = row_bytes(c.dtype, c.num_layers * c.rows_per_request * c.num_heads * len * 2 * c.head_dim);
  sources_.emplace(id, Source{DeviceBuffer(alloc_, bytes), len});
}

void BoundedKVStorage::drop_source(int id) { sources_.erase(id); }

const BoundedKVStorage::Source& BoundedKVStorage::source(int id) const {
  auto it = sources_.find(id);
  if (it == sources_.end()) throw InputError(fmt::format("bounded_kv: source {} is not registered", id));
  return it->second;
}

kernels::BoundedRowAddress BoundedKVStorage::slot_address(int64_t layer, int32_t slot, int32_t row_in_request) {
  const BoundedKVConfig& c = config_;
  kernels::BoundedRowAddress a;
  a.slot_head_stride = c.slot_tokens() * 2 * c.head_dim;
  if (c.slot_tokens() == 0) return a;  // a slot that holds nothing has no address
  const int64_t block = (static_cast<int64_t>(slot) * c.rows_per_request + row_in_request) * c.num_heads;
  a.slot = static_cast<unsigned char*>(layers_[static_cast<size_t>(layer)].data()) +
           block * a.slot_head_stride * static_cast<int64_t>(row_bytes(c.dtype, 1));
  return a;
}

kernels::BoundedRowAddress BoundedKVStorage::source_address(int64_t layer, const Source& s, int32_t row) const {
  const BoundedKVConfig& c = config_;
  kernels::BoundedRowAddress a;
  a.source_head_stride = s.len * 2 * c.head_dim;
  const int64_t block = (layer * c.rows_per_request + row) * c.num_heads;
  a.source = static_cast<const unsigned char*>(s.kv.data()) +
             block * a.source_head_stride * static_cast<int64_t>(row_bytes(c.dtype, 1));
  return a;
}

void BoundedKVStorage::check_args(const char* op, const LayerPass& args, int64_t rows, int64_t total_kv) const {
  const BoundedKVConfig& c = config_;
  if (static_cast<int64_t>(args.q_indptr.size()) != rows + 1)
    throw InputError(fmt::format("bounded_kv {}: q_indptr has {} entries for {} rows (expected {})", op,
                                 args.q_indptr.size(), rows, rows + 1));
  if (args.q.shape.rank() != 3)
    throw InputError(fmt::format("bounded_kv {}: q has shape {}, expected [total_q, Hq, D]", op, args.q.shape));
  const int64_t Hq = args.q.shape[1];
  const int64_t total_q = args.q_indptr.back();
  expect_shape(op, "q", args.q, Shape{total_q, Hq, c.head_dim});
  expect_shape(op, "k", args.k, Shape{total_kv, c.num_heads, c.head_dim});
  expect_shape(op, "v", args.v, Shape{total_kv, c.num_heads, c.head_dim});
  expect_shape(op, "out", args.out, Shape{total_q, Hq, c.head_dim});
  if (!(args.k.strides == args.v.strides)) throw InputError(fmt::format("bounded_kv {}: k and v must share strides", op));
  if (!args.rope_inv_freq.empty() && static_cast<int64_t>(args.rope_inv_freq.size()) * 2 != c.head_dim)
    throw InputError(fmt::format("bounded_kv {}: rope_inv_freq has {} entries for head_dim {}", op,
                                 args.rope_inv_freq.size(), c.head_dim));
  for (const auto* v : {&args.q, &args.k, &args.v})
    if (v->device != alloc_.device())
      throw InputError(fmt::format("bounded_kv {}: inputs live on {} but the resource on {}", op, to_string(v->device),
                                   to_string(alloc_.device())));
}

kernels::BoundedAttentionParams BoundedKVStorage::attention_params(const LayerPass& args, int64_t rows) const {
  const BoundedKVConfig& c = config_;
  kernels::BoundedAttentionParams p;
  p.rows = static_cast<int32_t>(rows);
  p.num_kv_heads = static_cast<int32_t>(c.num_heads);
  p.num_q_heads = static_cast<int32_t>(args.q.shape[1]);
  p.head_dim = static_cast<int32_t>(c.head_dim);
  p.kv_dtype = c.dtype;
  p.mask = args.mask;
  p.scale = args.scale.value_or(1.0f / std::sqrt(static_cast<float>(c.head_dim)));
  p.threads = options_.threads;
  p.rope_inv_freq = args.rope_inv_freq.empty() ? nullptr : args.rope_inv_freq.data();
  p.q = static_cast<const float*>(args.q.data);
  p.q_token_stride = args.q.strides[0];
  p.q_head_stride = args.q.strides[1];
  p.k = static_cast<const float*>(args.k.data);
  p.v = static_cast<const float*>(args.v.data);
  p.kv_token_stride = args.k.strides[0];
  p.kv_head_stride = args.k.strides[1];
  p.out = static_cast<float*>(args.out.data);
  p.out_token_stride = args.out.strides[0];
  p.out_head_stride = args.out.strides[1];
  return p;
}

const int32_t* BoundedKVStorage::queries(std::span<const int32_t> q_indptr) {
  if (alloc_.device() == Device::cpu) return q_indptr.data();
  if (!q_indptr_dev_ || q_indptr_.host.size() != q_indptr.size() ||
      !std::equal(q_indptr.begin(), q_indptr.end(), q_indptr_.host.begin())) {
    q_indptr_.host.assign(q_indptr.begin(), q_indptr.end());
    q_indptr_dev_ = q_indptr_.upload(alloc_);
  }
  return q_indptr_dev_;
}

void BoundedKVStorage::stage(const BoundedKVPlan& plan) {
  const BoundedKVConfig& c = config_;
  rows_ = static_cast<int64_t>(plan.rows.size());
  total_kv_ = plan.kv_indptr.back();
  table_.host.resize(static_cast<size_t>(rows_));
  address_.host.assign(static_cast<size_t>(c.num_layers * rows_), {});
  for (int64_t r = 0; r < rows_; ++r) {
    const auto ur = static_cast<size_t>(r);
    table_.host[ur] = plan.rows[ur].table;
    if (table_.host[ur].slot == kernels::kPaddingRow) continue;
    for (int64_t l = 0; l < c.num_layers; ++l) {
      kernels::BoundedRowAddress a = slot_address(l, table_.host[ur].slot, plan.row_in_request[ur]);
      if (plan.source_of_row[ur] >= 0) {
        const kernels::BoundedRowAddress s = source_address(l, source(plan.source_of_row[ur]), plan.row_in_request[ur]);
        a.source = s.source;
        a.source_head_stride = s.source_head_stride;
      }
      address_.host[static_cast<size_t>(l * rows_ + r)] = a;
    }
  }
  kv_indptr_.host = plan.kv_indptr;
  source_len_ = plan.source_len;
  // The tables are checked here, on the host, once per step: the ops take
  // them on trust (and on a device could not read them cheaply).
  std::vector<int32_t> no_queries(static_cast<size_t>(rows_ + 1), 0);
  kernels::check_bounded_tables(table_.host, no_queries, kv_indptr_.host, source_len_,
                                {c.retained_tokens(), c.scratch_tokens(), kernels::StepMask::full});
  table_.upload(alloc_);
  address_.upload(alloc_);
  kv_indptr_.upload(alloc_);
  q_indptr_dev_ = nullptr;
}

void BoundedKVStorage::attend(int64_t layer, const LayerPass& args) {
  const BoundedKVConfig& c = config_;
  if (layer < 0 || layer >= c.num_layers)
    throw InputError(fmt::format("bounded_kv attend: layer {} outside [0, {})", layer, c.num_layers));
  check_args("attend", args, rows_, total_kv_);
  if (args.mask == kernels::StepMask::causal) {
    for (int64_t r = 0; r < rows_; ++r) {
      const auto ur = static_cast<size_t>(r);
      if (table_.host[ur].slot == kernels::kPaddingRow) continue;
      const int32_t q_len = args.q_indptr[ur + 1] - args.q_indptr[ur];
      const int32_t span = kv_indptr_.host[ur + 1] - kv_indptr_.host[ur];
      if (q_len < 0 || q_len > span)
        throw InputError(fmt::format("bounded_kv attend: row {}: causal attention needs at most as many queries as step "
                                     "entries, got {} queries for a span of {}",
                                     r, q_len, span));
    }
  }
  const kernels::BoundedRowTable* table = table_.upload(alloc_);
  const kernels::BoundedRowAddress* address = address_.upload(alloc_) + layer * rows_;

  kernels::BoundedAttentionParams p = attention_params(args, rows_);
  p.table = table;
  p.address = address;
  p.q_indptr = queries(args.q_indptr);
  p.kv_indptr = kv_indptr_.upload(alloc_);
  kernels::bounded_attention(options_.backend, p);

  kernels::BoundedStoreParams s;
  s.rows = p.rows;
  s.num_kv_heads = p.num_kv_heads;
  s.head_dim = p.head_dim;
  s.kv_dtype = c.dtype;
  s.scratch_start = static_cast<int32_t>(c.retained_tokens());
  s.threads = options_.threads;
  s.table = table;
  s.address = address;
  s.kv_indptr = p.kv_indptr;
  s.k = p.k;
  s.v = p.v;
  s.kv_token_stride = p.kv_token_stride;
  s.kv_head_stride = p.kv_head_stride;
  kernels::bounded_store(options_.backend, s);
}

void BoundedKVStorage::commit() {
  const BoundedKVConfig& c = config_;
  const kernels::BoundedRowTable* table = table_.upload(alloc_);
  const kernels::BoundedRowAddress* address = address_.upload(alloc_);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    kernels::BoundedCommitParams p;
    p.rows = static_cast<int32_t>(rows_);
    p.num_kv_heads = static_cast<int32_t>(c.num_heads);
    p.head_dim = static_cast<int32_t>(c.head_dim);
    p.kv_dtype = c.dtype;
    p.scratch_start = static_cast<int32_t>(c.retained_tokens());
    p.threads = options_.threads;
    p.table = table;
    p.address = address + l * rows_;
    kernels::bounded_commit(options_.backend, p);
  }
}

void BoundedKVStorage::write_source(int id, int64_t layer, int64_t row, ConstTensorView k, ConstTensorView v) {
  const BoundedKVConfig& c = config_;
  if (layer < 0 || layer >= c.num_layers)
    throw InputError(fmt::format("bounded_kv source {}: layer {} outside [0, {})", id, layer, c.num_layers));
  if (row < 0 || row >= c.rows_per_request)
    throw InputError(fmt::format("bounded_kv source {}: row {} outside [0, {})", id, row, c.rows_per_request));
  const Source& s = source(id);
  expect_shape("source write", "k", k, Shape{s.len, c.num_heads, c.head_dim});
  expect_shape("source write", "v", v, Shape{s.len, c.num_heads, c.head_dim});
  if (!(k.strides == v.strides)) throw InputError("bounded_kv source write: k and v must share strides");
  // One row whose single write range puts its len entries at offset 0 of the source.
  Staged<kernels::BoundedRowTable> table;
  table.host.resize(1);
  table.host[0].slot = 0;
  table.host[0].writes[0] = kernels::KVWrite{0, 1, 0, static_cast<int32_t>(s.len)};
  const kernels::BoundedRowAddress src = source_address(layer, s, static_cast<int32_t>(row));
  Staged<kernels::BoundedRowAddress> at;
  at.host = {kernels::BoundedRowAddress{const_cast<void*>(src.source), nullptr, src.source_head_stride, 0}};
  Staged<int32_t> indptr;
  indptr.host = {0, static_cast<int32_t>(s.len)};
  kernels::BoundedStoreParams p;
  p.rows = 1;
  p.num_kv_heads = static_cast<int32_t>(c.num_heads);
  p.head_dim = static_cast<int32_t>(c.head_dim);
  p.kv_dtype = c.dtype;
  p.threads = options_.threads;
  p.table = table.upload(alloc_);
  p.address = at.upload(alloc_);
  p.kv_indptr = indptr.upload(alloc_);
  p.k = static_cast<const float*>(k.data);
  p.v = static_cast<const float*>(v.data);
  p.kv_token_stride = k.strides[0];
  p.kv_head_stride = k.strides[1];
  kernels::bounded_store(options_.backend, p);
  // The staged copies above must outlive the op they feed.
  synchronize(options_.backend);
}

void BoundedKVStorage::self_attend(const LayerPass& args) {
  const int64_t n = args.k.shape.rank() == 3 ? args.k.shape[0] : 0;
  check_args("self attention", args, 1, n);
  Staged<kernels::BoundedRowTable> table;
  table.host.resize(1);
  table.host[0].slot = 0;  // a row of its own entries: no slot, nothing stored
  Staged<kernels::BoundedRowAddress> at;
  at.host.resize(1);
  Staged<int32_t> kv_indptr;
  kv_indptr.host = {0, static_cast<int32_t>(n)};
  kernels::BoundedAttentionParams p = attention_params(args, 1);
  p.table = table.upload(alloc_);
  p.address = at.upload(alloc_);
  p.kv_indptr = kv_indptr.upload(alloc_);
  Staged<int32_t> q_indptr;
  q_indptr.host.assign(args.q_indptr.begin(), args.q_indptr.end());
  p.q_indptr = q_indptr.upload(alloc_);
  kernels::bounded_attention(options_.backend, p);
  synchronize(options_.backend);
}

std::size_t BoundedKVStorage::pool_bytes() const {
  std::size_t b = 0;
  for (const DeviceBuffer& l : layers_) b += l.bytes();
  return b;
}

std::size_t BoundedKVStorage::source_bytes() const {
  std::size_t b = 0;
  for (const auto& [id, s] : sources_) b += s.kv.bytes();
  return b;
}

namespace {

// Calls f(pool offset, state offset, bytes) for each contiguous run of a
// slot's retained entries in a layer: one per row and head.
template <class F>
void slot_runs(const BoundedKVConfig& c, int32_t slot, F&& f) {
  const auto es = static_cast<int64_t>(row_bytes(c.dtype, 1));
  const int64_t kept = c.retained_tokens() * 2 * c.head_dim * es, stride = c.slot_tokens() * 2 * c.head_dim * es;
  for (int64_t rh = 0; rh < c.rows_per_request * c.num_heads; ++rh)
    f((static_cast<int64_t>(slot) * c.rows_per_request * c.num_heads + rh) * stride, rh * kept,
      static_cast<std::size_t>(kept));
}

}  // namespace

HostBuffer BoundedKVStorage::copy_slot(int64_t layer, int32_t slot) const {
  const BoundedKVConfig& c = config_;
  HostBuffer out(c.dtype, Shape{c.rows_per_request, c.num_heads, c.retained_tokens(), 2 * c.head_dim});
  const auto* base = static_cast<const unsigned char*>(layers_.at(static_cast<size_t>(layer)).data());
  slot_runs(c, slot, [&](int64_t at, int64_t to, std::size_t bytes) {
    if (bytes) alloc_.copy_to_host(static_cast<unsigned char*>(out.data()) + to, base + at, bytes);
  });
  return out;
}

void BoundedKVStorage::load_slot(int64_t layer, int32_t slot, const HostBuffer& kv) {
  auto* base = static_cast<unsigned char*>(layers_.at(static_cast<size_t>(layer)).data());
  slot_runs(config_, slot, [&](int64_t at, int64_t from, std::size_t bytes) {
    if (bytes) alloc_.copy_from_host(base + at, static_cast<const unsigned char*>(kv.data()) + from, bytes);
  });
}

std::vector<unsigned char> BoundedKVStorage::read_layer(int64_t layer) const {
  const DeviceBuffer& b = layers_.at(static_cast<size_t>(layer));
  std::vector<unsigned char> out(b.bytes());
  if (!out.empty()) alloc_.copy_to_host(out.data(), b.data(), out.size());
  return out;
}

}  // namespace mstar

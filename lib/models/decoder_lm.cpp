#include "models/decoder_lm.h"

#include <map>

#include <fmt/format.h>

#include "core/errors.h"
#include "kernels/ops.h"
#include "kernels/rope.h"

namespace mstar {

namespace {

enum Use : int { kIds, kPos, kX, kLast, kNormed, kLogits, kInvFreq, kCachePos };

}  // namespace

DecoderLM::DecoderLM(const Architecture& arch, DecoderSpec spec, const Weights& weights, const ModelOptions& options)
    : arch_(arch),
      spec_(std::move(spec)),
      options_(options),
      params_(weights, options.backend),
      trunk_(spec_.shape, params_, spec_.names, spec_.final_norm, spec_.final_norm_bias, spec_.matrix_dtype, options),
      embed_dtype_(spec_.matrix_dtype.value_or(weights.get(spec_.embed).dtype)),
      head_dtype_(spec_.matrix_dtype.value_or(weights.get(spec_.head).dtype)),
      scratch_(allocator_for(options.backend)) {
  MSTAR_ASSERT(static_cast<int64_t>(spec_.inv_freq.size()) * 2 == spec_.shape.head_dim,
               "one rotary frequency per pair of the head");
  embed_ = params_.get(spec_.embed, embed_dtype_);
  embed_layout_ = params_.layout(spec_.embed, embed_dtype_);
  head_ = params_.get(spec_.head, head_dtype_);
  head_layout_ = params_.layout(spec_.head, head_dtype_);
  inv_freq_ = scratch_.upload<float>(kInvFreq, spec_.inv_freq);
}

float* DecoderLM::embed(const std::vector<int32_t>& ids) {
  const int64_t W = spec_.shape.width, n = static_cast<int64_t>(ids.size());
  float* x = scratch_.get<float>(kX, static_cast<size_t>(n * W));
  kernels::embed(options_.backend, {n, W, scratch_.upload<int32_t>(kIds, ids), embed_, embed_dtype_, x, embed_layout_,
                                    spec_.vocab});
  return x;
}

void DecoderLM::rotate(float* x, int64_t tokens, int64_t heads, const int64_t* positions) {
  const int64_t hd = spec_.shape.head_dim;
  kernels::RopeParams p;
  p.tokens = tokens;
  p.heads = static_cast<int32_t>(heads);
  p.head_dim = static_cast<int32_t>(hd);
  p.x = x;
  p.token_stride = heads * hd;
  p.head_stride = hd;
  p.section[0] = {0, static_cast<int32_t>(hd / 2), inv_freq_};
  p.positions = positions;
  p.threads = options_.threads;
  kernels::rope(options_.backend, p);
}

std::span<const float> DecoderLM::logits_of(const float* x, const std::vector<int32_t>& last) {
  const Backend b = options_.backend;
  const int64_t W = spec_.shape.width, rows = static_cast<int64_t>(last.size()), V = vocab_size();
  const int32_t* idx = scratch_.upload<int32_t>(kLast, last);
  float* picked = scratch_.get<float>(kNormed, static_cast<size_t>(rows * W));
  kernels::gather_rows(b, {rows, W, idx, x, picked});
  trunk_.final_norm(picked, rows, picked);
  float* out = scratch_.get<float>(kLogits, static_cast<size_t>(rows * V));
  trunk_.project(picked, rows, W, {head_, head_dtype_, head_layout_}, V, out);
  const auto n = static_cast<size_t>(rows * V);
  // The cpu backend's scratch is host memory already: a copy there cost a
  // 16-stream step of a 151,936-token vocabulary 9.7 MB and 1.7% of its time.
  if (scratch_.allocator().device() == Device::cpu) return {out, n};
  host_logits_.resize(n);
  scratch_.allocator().copy_to_host(host_logits_.data(), out, n * sizeof(float));
  return host_logits_;
}

void DecoderLM::prefill_source(ResourceSet& kv, int id, std::span<const int32_t> tokens, int64_t rows) {
  const TrunkShape& a = spec_.shape;
  const Backend b = options_.backend;
  const auto len = static_cast<int64_t>(tokens.size());
  const int64_t hd = a.head_dim, kvh = a.kv_heads;
  std::vector<int64_t> pos(static_cast<size_t>(len));
  for (int64_t t = 0; t < len; ++t) pos[static_cast<size_t>(t)] = t;
  const int64_t* pos_dev = scratch_.upload<int64_t>(kPos, pos);
  const std::vector<int32_t> indptr{0, static_cast<int32_t>(len)};
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<int32_t> ids = r == 0 ? std::vector<int32_t>(tokens.begin(), tokens.end())
                                            : std::vector<int32_t>(tokens.size(), 0);
    float* x = embed(ids);
    trunk_.run(x, len, [&](int64_t l, float* q, float* k, float* v, float* o) {
      rotate(q, len, a.heads, pos_dev);
      // Stream positions cache keys rotated; cache positions rotate on read.
      if (spec_.positions == PositionMode::stream) rotate(k, len, kvh, pos_dev);
      auto [memory, local] = kv.attention(l);
      LayerPass args;
      args.q = ConstTensorView{q, DType::f32, Shape{len, a.heads, hd}, Shape{a.heads * hd, hd, 1}, scratch_.allocator().device()};
      args.q_indptr = indptr;
      args.k = ConstTensorView{k, DType::f32, Shape{len, kvh, hd}, Shape{kvh * hd, hd, 1}, args.q.device};
      args.v = ConstTensorView{v, DType::f32, Shape{len, kvh, hd}, Shape{kvh * hd, hd, 1}, args.q.device};
      args.out = TensorView{o, DType::f32, Shape{len, a.heads, hd}, Shape{a.heads * hd, hd, 1}, args.q.device};
      args.mask = kernels::StepMask::causal;
      if (spec_.positions == PositionMode::cache) args.rope_inv_freq = {inv_freq_, static_cast<size_t>(hd / 2)};
      memory.prefill_source(id, local, r, args);
    });
  }
  synchronize(b);
}

std::span<const float> DecoderLM::step(ResourceSet& kv, const Step& step, const StepContext& ctx,
                                      const std::vector<std::vector<int32_t>>& row_tokens) {
  const TrunkShape& a = spec_.shape;
  const auto rows = static_cast<int64_t>(ctx.rows());
  MSTAR_ASSERT(static_cast<int64_t>(row_tokens.size()) == rows, "one token list per row");
  std::vector<int32_t> tokens;
  std::vector<int64_t> stream_pos;  // each token's stream position
  std::vector<int32_t> indptr{0};   // row r's tokens: [indptr[r], indptr[r+1])
  std::vector<int32_t> last;
  for (int64_t r = 0; r < rows; ++r) {
    const auto& tk = row_tokens[static_cast<size_t>(r)];
    MSTAR_ASSERT(!tk.empty(), "every row feeds at least one token: its last gives the row's logits");
    int64_t base = 0;
    if (!ctx.is_padding[static_cast<size_t>(r)]) {
      const StreamPosition& p = step.streams.at(ctx.request_ids[static_cast<size_t>(r)]);
      base = p.source_len + p.written;
    }
    for (size_t j = 0; j < tk.size(); ++j) {
      tokens.push_back(tk[j]);
      stream_pos.push_back(base + static_cast<int64_t>(j));
    }
    indptr.push_back(static_cast<int32_t>(tokens.size()));
    last.push_back(static_cast<int32_t>(tokens.size()) - 1);
  }
  const auto n = static_cast<int64_t>(tokens.size());
  const int64_t hd = a.head_dim, kvh = a.kv_heads;
  for (int32_t t : tokens) MSTAR_ASSERT(t >= 0 && t < vocab_size(), "token outside the vocabulary");
  float* x = embed(tokens);
  const int64_t* pos_stream = scratch_.upload<int64_t>(kPos, stream_pos);
  // Cache positions: each row's queries sit after its retained entries, whose
  // count depends on the resource serving the layer; one upload per resource.
  std::map<const AttentionMemory*, const int64_t*> cache_pos;
  int next_use = kCachePos;
  auto positions_for = [&](const AttentionMemory& memory) -> const int64_t* {
    if (spec_.positions == PositionMode::stream) return pos_stream;
    auto it = cache_pos.find(&memory);
    if (it != cache_pos.end()) return it->second;
    std::vector<int64_t> pos(static_cast<size_t>(n));
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t base = memory.seen_before(static_cast<size_t>(r));
      for (int32_t t = indptr[static_cast<size_t>(r)]; t < indptr[static_cast<size_t>(r + 1)]; ++t)
        pos[static_cast<size_t>(t)] = base + (t - indptr[static_cast<size_t>(r)]);
    }
    return cache_pos.emplace(&memory, scratch_.upload<int64_t>(next_use++, pos)).first->second;
  };
  trunk_.run(x, n, [&](int64_t l, float* q, float* k, float* v, float* o) {
    auto [memory, local] = kv.attention(l);
    rotate(q, n, a.heads, positions_for(memory));
    if (spec_.positions == PositionMode::stream) rotate(k, n, kvh, pos_stream);
    const Device dev = scratch_.allocator().device();
    LayerPass args;
    args.q = ConstTensorView{q, DType::f32, Shape{n, a.heads, hd}, Shape{a.heads * hd, hd, 1}, dev};
    args.q_indptr = indptr;
    args.k = ConstTensorView{k, DType::f32, Shape{n, kvh, hd}, Shape{kvh * hd, hd, 1}, dev};
    args.v = ConstTensorView{v, DType::f32, Shape{n, kvh, hd}, Shape{kvh * hd, hd, 1}, dev};
    args.out = TensorView{o, DType::f32, Shape{n, a.heads, hd}, Shape{a.heads * hd, hd, 1}, dev};
    args.mask = kernels::StepMask::causal;
    if (spec_.positions == PositionMode::cache) args.rope_inv_freq = {inv_freq_, static_cast<size_t>(hd / 2)};
    memory.attend(local, args);
  });
  return logits_of(x, last);
}

}  // namespace mstar

#include "models/tts_model.h"

#include <map>

#include <fmt/format.h>

#include "core/errors.h"
#include "ops.h"
#include "rope.h"

namespace mstar {

namespace {

enum Use : int { kIds, kPos, kX, kLast, kNormed, kLogits, kInvFreq, kCachePos };

std::unique_ptr<Architecture> read_tts(ArchitectureInput& in) {
  FieldSource& src = in.fields;
  CommonArchitecture c;
  TtsFields t;
  const bool common_ok = read_common_architecture(src, c);
  bool ok = read_declared(src, t) && common_ok;
  if (!ok) return nullptr;
  if (c.positions == "cache" && c.head_dim % 2 != 0) {
    src.error("head_dim", fmt::format("{} {} must be even for rotary positions", src.path("head_dim"), c.head_dim));
    ok = false;
  }
  if (c.heads * c.head_dim != c.width) {
    src.error("head_dim", fmt::format("{}: heads {} x head_dim {} = {} must equal width {} for a tts model", src.where(),
                                      c.heads, c.head_dim, c.heads * c.head_dim, c.width));
    ok = false;
  }
  if (t.end_token >= t.vocab_size) {
    src.error("end_token",
              fmt::format("{} {} must be below vocab_size {}", src.path("end_token"), t.end_token, t.vocab_size));
    ok = false;
  }
  if (!ok) return nullptr;
  return std::make_unique<TtsArchitecture>(c, t);
}

}  // namespace

std::vector<TensorSpec> TtsArchitecture::tensors() const {
  const auto& c = common;
  std::vector<TensorSpec> t;
  t.push_back({"embed.weight", {tts.vocab_size, c.width}});
  append_trunk_tensors(c, t);
  t.push_back({"head.weight", {tts.vocab_size, c.width}});
  return t;
}

nlohmann::json TtsArchitecture::to_json() const {
  nlohmann::json j = common_json(common);
  for_each_field<TtsFields>([&](const auto& d) { j[std::string(d.name)] = tts.*(d.member); });
  return j;
}

TtsModel::TtsModel(const TtsArchitecture& arch, const Weights& weights, const ModelOptions& options)
    : arch_(arch),
      options_(options),
      params_(weights, options.backend),
      // The in-house families compute with f32 matrices, whatever their file stores.
      trunk_(arch.trunk(), params_, inhouse_names, "final_norm.weight", DType::f32, options),
      positions_(arch.common.positions == "cache" ? PositionMode::cache : PositionMode::stream),
      embed_(params_.f32("embed.weight")),
      head_(params_.f32("head.weight")),
      scratch_(allocator_for(options.backend)) {
  const std::vector<float> f =
      rope_inv_freq(static_cast<int32_t>(arch.common.head_dim), static_cast<double>(arch.common.rope_theta));
  inv_freq_ = scratch_.upload<float>(kInvFreq, f);
}

void TtsModel::rotate(float* x, int64_t tokens, int64_t heads, const int64_t* positions) {
  const int64_t hd = arch_.common.head_dim;
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

void TtsModel::logits_of(const float* x, const std::vector<int32_t>& last, std::vector<float>& logits) {
  const Backend b = options_.backend;
  const int64_t W = arch_.common.width, rows = static_cast<int64_t>(last.size()), V = vocab_size();
  const int32_t* idx = scratch_.upload<int32_t>(kLast, last);
  float* picked = scratch_.get<float>(kNormed, static_cast<size_t>(rows * W));
  kernels::gather_rows(b, {rows, W, idx, x, picked});
  trunk_.final_norm(picked, rows, picked);
  float* out = scratch_.get<float>(kLogits, static_cast<size_t>(rows * V));
  trunk_.project(picked, rows, W, head_, DType::f32, V, out);
  logits.resize(static_cast<size_t>(rows * V));
  scratch_.allocator().copy_to_host(logits.data(), out, logits.size() * sizeof(float));
}

void TtsModel::prefill_source(ResourceSet& kv, int id, std::span<const int32_t> tokens, int64_t rows) {
  const auto& a = arch_.common;
  const Backend b = options_.backend;
  const auto len = static_cast<int64_t>(tokens.size());
  const int64_t hd = a.head_dim, kvh = a.kv_heads, W = a.width;
  std::vector<int64_t> pos(static_cast<size_t>(len));
  for (int64_t t = 0; t < len; ++t) pos[static_cast<size_t>(t)] = t;
  const int64_t* pos_dev = scratch_.upload<int64_t>(kPos, pos);
  const std::vector<int32_t> indptr{0, static_cast<int32_t>(len)};
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<int32_t> ids = r == 0 ? std::vector<int32_t>(tokens.begin(), tokens.end())
                                            : std::vector<int32_t>(tokens.size(), 0);
    float* x = scratch_.get<float>(kX, static_cast<size_t>(len * W));
    kernels::embed(b, {len, W, scratch_.upload<int32_t>(kIds, ids), embed_, DType::f32, x});
    trunk_.run(x, len, [&](int64_t l, float* q, float* k, float* v, float* o) {
      rotate(q, len, a.heads, pos_dev);
      // Stream positions cache keys rotated; cache positions rotate on read.
      if (positions_ == PositionMode::stream) rotate(k, len, kvh, pos_dev);
      auto [res, local] = kv.layer<BoundedKVManager>(l);
      BoundedAttendArgs args;
      args.q = ConstTensorView{q, DType::f32, Shape{len, a.heads, hd}, Shape{a.heads * hd, hd, 1}, scratch_.allocator().device()};
      args.q_indptr = indptr;
      args.k = ConstTensorView{k, DType::f32, Shape{len, kvh, hd}, Shape{kvh * hd, hd, 1}, args.q.device};
      args.v = ConstTensorView{v, DType::f32, Shape{len, kvh, hd}, Shape{kvh * hd, hd, 1}, args.q.device};
      args.out = TensorView{o, DType::f32, Shape{len, a.heads, hd}, Shape{a.heads * hd, hd, 1}, args.q.device};
      args.mask = kernels::StepMask::causal;
      if (positions_ == PositionMode::cache) args.rope_inv_freq = {inv_freq_, static_cast<size_t>(hd / 2)};
      res.prefill_source(id, local, r, args);
    });
  }
  synchronize(b);
}

void TtsModel::step(ResourceSet& kv, const Step& step, const StepContext& ctx,
                    const std::vector<std::vector<int32_t>>& row_tokens, std::vector<float>& logits) {
  const auto& a = arch_.common;
  const Backend b = options_.backend;
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
  const int64_t hd = a.head_dim, kvh = a.kv_heads, W = a.width;
  for (int32_t t : tokens) MSTAR_ASSERT(t >= 0 && t < vocab_size(), "token outside the vocabulary");
  float* x = scratch_.get<float>(kX, static_cast<size_t>(n * W));
  kernels::embed(b, {n, W, scratch_.upload<int32_t>(kIds, tokens), embed_, DType::f32, x});
  const int64_t* pos_stream = scratch_.upload<int64_t>(kPos, stream_pos);
  // Cache positions: each row's queries sit after its retained entries, whose
  // count depends on the resource serving the layer; one upload per resource.
  std::map<const BoundedKVManager*, const int64_t*> cache_pos;
  int next_use = kCachePos;
  auto positions_for = [&](const BoundedKVManager& res) -> const int64_t* {
    if (positions_ == PositionMode::stream) return pos_stream;
    auto it = cache_pos.find(&res);
    if (it != cache_pos.end()) return it->second;
    std::vector<int64_t> pos(static_cast<size_t>(n));
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t base = res.staged().rows[static_cast<size_t>(r)].table.slot == kernels::kPaddingRow
                               ? 0
                               : res.staged().retained(static_cast<size_t>(r));
      for (int32_t t = indptr[static_cast<size_t>(r)]; t < indptr[static_cast<size_t>(r + 1)]; ++t)
        pos[static_cast<size_t>(t)] = base + (t - indptr[static_cast<size_t>(r)]);
    }
    return cache_pos.emplace(&res, scratch_.upload<int64_t>(next_use++, pos)).first->second;
  };
  trunk_.run(x, n, [&](int64_t l, float* q, float* k, float* v, float* o) {
    auto [res, local] = kv.layer<BoundedKVManager>(l);
    rotate(q, n, a.heads, positions_for(res));
    if (positions_ == PositionMode::stream) rotate(k, n, kvh, pos_stream);
    const Device dev = scratch_.allocator().device();
    BoundedAttendArgs args;
    args.q = ConstTensorView{q, DType::f32, Shape{n, a.heads, hd}, Shape{a.heads * hd, hd, 1}, dev};
    args.q_indptr = indptr;
    args.k = ConstTensorView{k, DType::f32, Shape{n, kvh, hd}, Shape{kvh * hd, hd, 1}, dev};
    args.v = ConstTensorView{v, DType::f32, Shape{n, kvh, hd}, Shape{kvh * hd, hd, 1}, dev};
    args.out = TensorView{o, DType::f32, Shape{n, a.heads, hd}, Shape{a.heads * hd, hd, 1}, dev};
    args.mask = kernels::StepMask::causal;
    if (positions_ == PositionMode::cache) args.rope_inv_freq = {inv_freq_, static_cast<size_t>(hd / 2)};
    res.attend(local, args);
  });
  logits_of(x, last, logits);
}

ModelFamily tts_family() {
  ModelFamily f;
  f.name = "tts";
  f.task = "speech";
  f.resource_type = "bounded_kv";
  f.summary = "mstar's small voice-prompt speech decoder (architecture stated in the manifest)";
  f.read_architecture = read_tts;
  f.make = [](const Architecture& a, const Weights& w, const ModelOptions& o) -> std::unique_ptr<Model> {
    return std::make_unique<TtsModel>(dynamic_cast<const TtsArchitecture&>(a), w, o);
  };
  return f;
}

}  // namespace mstar

#include "models/tts_model.h"

#include <cstring>

#include "core/errors.h"
#include "models/ops.h"
#include "rope.h"

namespace mstar {

TtsModel::TtsModel(const ModelManifest& m, const Weights& weights, Backend backend)
    : arch_(m.arch),
      w_(weights),
      trunk_(m.arch.common, weights, backend),
      positions_(m.arch.common.positions == "cache" ? PositionMode::cache : PositionMode::stream),
      inv_freq_(rope_inv_freq(static_cast<int32_t>(m.arch.common.head_dim), static_cast<double>(m.arch.common.rope_theta))) {
  MSTAR_ASSERT(m.kind == ModelKind::tts, "TtsModel needs a tts manifest");
}

void TtsModel::embed(const std::vector<int32_t>& tokens, std::vector<float>& x) const {
  const int64_t W = arch_.common.width;
  x.resize(tokens.size() * static_cast<size_t>(W));
  const float* e = w_.get("embed.weight");
  for (size_t i = 0; i < tokens.size(); ++i) {
    MSTAR_ASSERT(tokens[i] >= 0 && tokens[i] < vocab(), "token outside the vocabulary");
    std::memcpy(&x[i * static_cast<size_t>(W)], e + tokens[i] * W, static_cast<size_t>(W) * sizeof(float));
  }
}

void TtsModel::rotate(float* x, int64_t heads, double pos) const {
  const auto hd = static_cast<int32_t>(arch_.common.head_dim);
  for (int64_t h = 0; h < heads; ++h) rotate_half(x + h * hd, hd, pos, inv_freq_.data());
}

void TtsModel::logits_of(const std::vector<float>& x, const std::vector<int64_t>& rows_last,
                         std::vector<float>& logits) const {
  const int64_t W = arch_.common.width;
  std::vector<float> last(rows_last.size() * static_cast<size_t>(W));
  for (size_t r = 0; r < rows_last.size(); ++r)
    std::memcpy(&last[r * static_cast<size_t>(W)], &x[static_cast<size_t>(rows_last[r] * W)], static_cast<size_t>(W) * sizeof(float));
  std::vector<float> normed;
  trunk_.final_norm(last, static_cast<int64_t>(rows_last.size()), normed);
  logits.resize(rows_last.size() * static_cast<size_t>(vocab()));
  ops::matmul(trunk_.backend(), {normed.data(), static_cast<int64_t>(rows_last.size()), W, w_.get("head.weight"), vocab(),
                                 logits.data()});
}

TtsModel::SourceKV TtsModel::prefill_source(const std::vector<int32_t>& voice, int64_t rows) const {
  const auto& a = arch_.common;
  const auto len = static_cast<int64_t>(voice.size());
  const int64_t hd = a.head_dim, kvh = a.kv_heads;
  SourceKV out;
  out.len = len;
  out.k.assign(static_cast<size_t>(a.layers * rows * kvh * len * hd), 0.0f);
  out.v = out.k;
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<int32_t> tokens = r == 0 ? voice : std::vector<int32_t>(voice.size(), 0);
    std::vector<float> x;
    embed(tokens, x);
    trunk_.run(x, len, [&](int64_t l, float* q, float* k, float* v, float* o) {
      for (int64_t t = 0; t < len; ++t) {
        rotate(q + t * a.heads * hd, a.heads, static_cast<double>(t));
        // Stream positions cache keys rotated; cache positions rotate on read.
        if (positions_ == PositionMode::stream) rotate(k + t * kvh * hd, kvh, static_cast<double>(t));
      }
      // Scatter [len, kvh, hd] into the source layout [layers, rows, kvh, len, hd].
      for (int64_t h = 0; h < kvh; ++h)
        for (int64_t t = 0; t < len; ++t) {
          const size_t dst = static_cast<size_t>((((l * rows + r) * kvh + h) * len + t) * hd);
          std::memcpy(&out.k[dst], k + (t * kvh + h) * hd, static_cast<size_t>(hd) * sizeof(float));
          std::memcpy(&out.v[dst], v + (t * kvh + h) * hd, static_cast<size_t>(hd) * sizeof(float));
        }
      // In cache mode the keys were not rotated: rotate a copy to attend.
      std::vector<float> kr(k, k + len * kvh * hd);
      if (positions_ == PositionMode::cache)
        for (int64_t t = 0; t < len; ++t) rotate(kr.data() + t * kvh * hd, kvh, static_cast<double>(t));
      dense_attention(q, len, kr.data(), v, len, a.heads, kvh, hd, [](int64_t i) { return i + 1; }, o);
    });
  }
  return out;
}

void TtsModel::step(BoundedKVManager& kv, const BoundedKVStep& step, const StepContext& ctx, const BoundedKVPlan& plan,
                    const std::vector<std::vector<int32_t>>& row_tokens, std::vector<float>& logits) const {
  const auto& a = arch_.common;
  const auto rows = static_cast<int64_t>(ctx.rows());
  MSTAR_ASSERT(static_cast<int64_t>(row_tokens.size()) == rows, "one token list per row");
  std::vector<int32_t> tokens;
  std::vector<int64_t> pos;       // each token's rotary position
  std::vector<int32_t> indptr{0};  // row r's tokens: [indptr[r], indptr[r+1])
  std::vector<int64_t> last;
  for (int64_t r = 0; r < rows; ++r) {
    const auto& tk = row_tokens[static_cast<size_t>(r)];
    MSTAR_ASSERT(static_cast<int32_t>(tk.size()) ==
                     plan.kv_indptr[static_cast<size_t>(r + 1)] - plan.kv_indptr[static_cast<size_t>(r)],
                 "row tokens must match the planned span");
    int64_t base = 0;
    if (positions_ == PositionMode::stream) {
      const StreamPosition& p = step.positions.at(ctx.request_ids[static_cast<size_t>(r)]);
      base = p.source_len + p.written;
    } else {
      for (const auto& rd : plan.rows[static_cast<size_t>(r)].table.reads) base += rd.len;  // retained entries
    }
    for (size_t j = 0; j < tk.size(); ++j) {
      tokens.push_back(tk[j]);
      pos.push_back(base + static_cast<int64_t>(j));
    }
    indptr.push_back(static_cast<int32_t>(tokens.size()));
    last.push_back(static_cast<int64_t>(tokens.size()) - 1);
  }
  const auto n = static_cast<int64_t>(tokens.size());
  const int64_t hd = a.head_dim, kvh = a.kv_heads;
  std::vector<float> x;
  embed(tokens, x);
  trunk_.run(x, n, [&](int64_t l, float* q, float* k, float* v, float* o) {
    for (int64_t t = 0; t < n; ++t) {
      rotate(q + t * a.heads * hd, a.heads, static_cast<double>(pos[static_cast<size_t>(t)]));
      if (positions_ == PositionMode::stream) rotate(k + t * kvh * hd, kvh, static_cast<double>(pos[static_cast<size_t>(t)]));
    }
    BoundedAttendArgs args;
    args.q = f32_view(q, Shape{n, a.heads, hd});
    args.q_indptr = indptr;
    args.k = f32_view(k, Shape{n, kvh, hd});
    args.v = f32_view(v, Shape{n, kvh, hd});
    args.out = f32_view(o, Shape{n, a.heads, hd});
    args.mask = kernels::StepMask::causal;
    if (positions_ == PositionMode::cache) args.rope_inv_freq = inv_freq_;
    kv.attend(l, plan, args);
  });
  logits_of(x, last, logits);
}

std::vector<float> TtsModel::full_history_logits(const std::vector<int32_t>& voice,
                                                 const std::vector<int32_t>& tokens) const {
  const auto& a = arch_.common;
  std::vector<int32_t> all = voice;
  all.insert(all.end(), tokens.begin(), tokens.end());
  const auto n = static_cast<int64_t>(all.size());
  const int64_t hd = a.head_dim, kvh = a.kv_heads;
  std::vector<float> x;
  embed(all, x);
  trunk_.run(x, n, [&](int64_t, float* q, float* k, float* v, float* o) {
    for (int64_t t = 0; t < n; ++t) {
      rotate(q + t * a.heads * hd, a.heads, static_cast<double>(t));
      rotate(k + t * kvh * hd, kvh, static_cast<double>(t));
    }
    dense_attention(q, n, k, v, n, a.heads, kvh, hd, [](int64_t i) { return i + 1; }, o);
  });
  std::vector<float> logits;
  logits_of(x, {n - 1}, logits);
  return logits;
}

}  // namespace mstar

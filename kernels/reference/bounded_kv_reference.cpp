// The reference backend: plain loops, one query at a time, double-precision
// softmax. Slow on purpose and obviously right; every other backend is
// tested against it.
#include <cmath>
#include <vector>

#include "kernels/bounded_kv.h"
#include "kernels/rope.h"

namespace mstar::kernels {

namespace {

// Stored entry `token` of head `h` in a [H, tokens, 2D] block.
const void* stored(const void* base, int64_t head_stride, int32_t h, int64_t token, int32_t D, DType dt) {
  const auto* bytes = static_cast<const unsigned char*>(base);
  return bytes + (h * head_stride + token * 2 * D) * static_cast<int64_t>(row_bytes(dt, 1));
}

}  // namespace

void bounded_attention_reference(const BoundedAttentionParams& p) {
  const int32_t D = p.head_dim;
  const int32_t group = p.num_q_heads / p.num_kv_heads;
  std::vector<std::vector<float>> keys, values;  // the row's visible entries, f32
  std::vector<double> scores;

  for (int32_t r = 0; r < p.rows; ++r) {
    const BoundedRowTable& t = p.table[r];
    const BoundedRowAddress& a = p.address[r];
    const int32_t q0 = p.q_indptr[r], q_len = p.q_indptr[r + 1] - q0;
    const int32_t kv0 = p.kv_indptr[r], span = p.kv_indptr[r + 1] - kv0;

    for (int32_t qi = 0; qi < q_len; ++qi) {
      for (int32_t hq = 0; hq < p.num_q_heads; ++hq) {
        float* out = p.out + (q0 + qi) * p.out_token_stride + hq * p.out_head_stride;
        for (int32_t d = 0; d < D; ++d) out[d] = 0.0f;
        if (t.slot < 0) continue;
        const int32_t h = hq / group;

        keys.clear();
        values.clear();
        for (const KVRead& rd : t.reads) {
          const void* base = rd.from_source ? a.source : a.slot;
          const int64_t hs = rd.from_source ? a.source_head_stride : a.slot_head_stride;
          for (int32_t i = 0; i < rd.len; ++i) {
            const void* e = stored(base, hs, h, rd.start + i, D, p.kv_dtype);
            std::vector<float> kk(static_cast<size_t>(D)), vv(static_cast<size_t>(D));
            for (int32_t d = 0; d < D; ++d) {
              kk[static_cast<size_t>(d)] = load_as_f32(e, p.kv_dtype, static_cast<size_t>(d));
              vv[static_cast<size_t>(d)] = load_as_f32(e, p.kv_dtype, static_cast<size_t>(D + d));
            }
            keys.push_back(std::move(kk));
            values.push_back(std::move(vv));
          }
        }
        const int32_t visible_step = p.mask == StepMask::causal ? span - q_len + qi + 1 : span;
        for (int32_t j = 0; j < visible_step; ++j) {
          const float* kk = p.k + (kv0 + j) * p.kv_token_stride + h * p.kv_head_stride;
          const float* vv = p.v + (kv0 + j) * p.kv_token_stride + h * p.kv_head_stride;
          keys.emplace_back(kk, kk + D);
          values.emplace_back(vv, vv + D);
        }
        if (keys.empty()) continue;  // nothing visible: the output stays zero
        if (p.rope_inv_freq)  // each key by its ordinal in the visible sequence
          for (size_t j = 0; j < keys.size(); ++j) rotate_half(keys[j].data(), D, static_cast<double>(j), p.rope_inv_freq);

        const float* q = p.q + (q0 + qi) * p.q_token_stride + hq * p.q_head_stride;
        scores.assign(keys.size(), 0.0);
        double mx = -INFINITY;
        for (size_t j = 0; j < keys.size(); ++j) {
          double s = 0.0;
          for (int32_t d = 0; d < D; ++d) s += static_cast<double>(q[d]) * keys[j][static_cast<size_t>(d)];
          scores[j] = s * p.scale;
          mx = std::max(mx, scores[j]);
        }
        double denom = 0.0;
        for (double& s : scores) denom += (s = std::exp(s - mx));
        for (int32_t d = 0; d < D; ++d) {
          double acc = 0.0;
          for (size_t j = 0; j < keys.size(); ++j) acc += scores[j] * values[j][static_cast<size_t>(d)];
          out[d] = static_cast<float>(acc / denom);
        }
      }
    }
  }
}

}  // namespace mstar::kernels

// The reference ring attention: every query against every token slot of the
// whole buffer, through a mask built from the row's visible ranges. Slow and
// obviously right: isolation between sessions comes from the mask alone.
#include <cmath>
#include <vector>

#include "kernels/ring_kv.h"

namespace mstar::kernels {

void ring_attention_reference(const RingAttentionParams& p) {
  const int32_t D = p.head_dim, group = p.num_q_heads / p.num_kv_heads;
  const int64_t plane = static_cast<int64_t>(p.num_kv_heads) * p.total_slots * D;  // keys, then values
  std::vector<double> w;
  std::vector<int64_t> idx;
  std::vector<uint8_t> mask(static_cast<size_t>(p.total_slots));
  for (int32_t r = 0; r < p.rows; ++r) {
    std::fill(mask.begin(), mask.end(), 0);
    for (int32_t i = p.range_indptr[r]; i < p.range_indptr[r + 1]; ++i)
      for (int64_t s = 0; s < p.ranges[i].len; ++s) mask[static_cast<size_t>(p.ranges[i].start + s)] = 1;
    idx.clear();
    for (int64_t i = 0; i < p.total_slots; ++i)
      if (mask[static_cast<size_t>(i)]) idx.push_back(i);
    for (int32_t t = 0; t < p.q_tokens; ++t)
      for (int32_t hq = 0; hq < p.num_q_heads; ++hq) {
        const int32_t h = hq / group;
        const float* q = p.q + (static_cast<int64_t>(r) * p.q_tokens + t) * p.q_token_stride + hq * p.q_head_stride;
        float* out = p.out + (static_cast<int64_t>(r) * p.q_tokens + t) * p.out_token_stride + hq * p.out_head_stride;
        w.assign(idx.size(), 0.0);
        double mx = -INFINITY;
        for (size_t j = 0; j < idx.size(); ++j) {
          double s = 0;
          for (int32_t d = 0; d < D; ++d)
            s += static_cast<double>(q[d]) *
                 load_as_f32(p.kv, p.kv_dtype, static_cast<size_t>((h * p.total_slots + idx[j]) * D + d));
          w[j] = s * p.scale;
          mx = std::max(mx, w[j]);
        }
        double den = 0;
        for (double& x : w) den += (x = std::exp(x - mx));
        for (int32_t d = 0; d < D; ++d) {
          double acc = 0;
          for (size_t j = 0; j < idx.size(); ++j)
            acc += w[j] * load_as_f32(p.kv, p.kv_dtype, static_cast<size_t>(plane + (h * p.total_slots + idx[j]) * D + d));
          out[d] = idx.empty() ? 0.0f : static_cast<float>(acc / den);
        }
      }
  }
}

}  // namespace mstar::kernels

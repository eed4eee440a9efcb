// The cpu backend for bounded attention: spreads the (row, KV head) units
// over OpenMP threads, then stores the step's entries.
#include <algorithm>
#include <vector>

#include "core/errors.h"
#include "cpu/attention_cpu.h"

namespace mstar::kernels {

namespace {

void store_unit(const BoundedAttentionParams& p, int32_t r, int32_t h) {
  const BoundedRowTable& t = p.table[r];
  const BoundedRowAddress& a = p.address[r];
  const int32_t D = p.head_dim;
  const int32_t kv0 = p.kv_indptr[r];
  const auto es = static_cast<int64_t>(dtype_size(p.kv_dtype));
  for (const KVWrite& w : t.writes) {
    for (int32_t i = 0; i < w.len; ++i) {
      const int32_t j = w.fresh + i * w.fresh_step;
      void* e = static_cast<unsigned char*>(a.slot) + (h * a.slot_head_stride + static_cast<int64_t>(w.start + i) * 2 * D) * es;
      const float* kk = p.k + (kv0 + j) * p.kv_token_stride + h * p.kv_head_stride;
      const float* vv = p.v + (kv0 + j) * p.kv_token_stride + h * p.kv_head_stride;
      for (int32_t d = 0; d < D; ++d) {
        store_from_f32(e, p.kv_dtype, static_cast<size_t>(d), kk[d]);
        store_from_f32(e, p.kv_dtype, static_cast<size_t>(D + d), vv[d]);
      }
    }
  }
}

}  // namespace

void bounded_attention_cpu(const BoundedAttentionParams& p) { bounded_attention_cpu_isa(p, best_cpu_isa()); }

void bounded_attention_cpu_isa(const BoundedAttentionParams& p, CpuIsa isa) {
  MSTAR_ASSERT(cpu_supports(isa), "bounded_attention_cpu_isa: this processor lacks the instruction set");
  const auto unit = isa == CpuIsa::avx2 ? &avx2::bounded_unit : &generic::bounded_unit;
  const int32_t H = p.num_kv_heads, D = p.head_dim;
  const int32_t group = p.num_q_heads / H;

  std::vector<int32_t> rows;  // rows that attend (padding rows output zeros)
  int32_t max_qn = 0;
  for (int32_t r = 0; r < p.rows; ++r) {
    const int32_t q_len = p.q_indptr[r + 1] - p.q_indptr[r];
    if (p.table[r].slot >= 0) {
      rows.push_back(r);
      max_qn = std::max(max_qn, q_len * group);
    } else {
      for (int32_t qt = 0; qt < q_len; ++qt)
        for (int32_t hq = 0; hq < p.num_q_heads; ++hq)
          std::fill_n(p.out + (p.q_indptr[r] + qt) * p.out_token_stride + hq * p.out_head_stride, D, 0.0f);
    }
  }
  const int64_t units = static_cast<int64_t>(rows.size()) * H;

#pragma omp parallel num_threads(p.threads) if (units > 1)
  {
    const CpuScratchBuffer scratch(max_qn, D);
#pragma omp for schedule(dynamic, 1)
    for (int64_t u = 0; u < units; ++u)
      unit(p, rows[static_cast<size_t>(u / H)], static_cast<int32_t>(u % H), scratch.get());
  }

  // Every read above is done; now the step's entries may overwrite the ring.
#pragma omp parallel for num_threads(p.threads) schedule(static) if (units > 1)
  for (int64_t u = 0; u < units; ++u) store_unit(p, rows[static_cast<size_t>(u / H)], static_cast<int32_t>(u % H));
}

}  // namespace mstar::kernels

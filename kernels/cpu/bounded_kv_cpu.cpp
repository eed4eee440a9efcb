// The cpu backend for the bounded ops: attention spreads the (row, KV head)
// units over the pool's threads; store and commit are copies on the host,
// shared with the reference backend.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/errors.h"
#include "kernels/cpu/attention_cpu.h"
#include "kernels/cpu/thread_pool.h"

namespace mstar::kernels {

namespace {

// Entry `token` of head `h` in a [H, tokens, 2D] block of element size es.
unsigned char* entry(void* block, int64_t head_stride, int32_t h, int64_t token, int32_t D, int64_t es) {
  return static_cast<unsigned char*>(block) + (h * head_stride + token * 2 * D) * es;
}

}  // namespace

void bounded_attention_cpu(const BoundedAttentionParams& p) { bounded_attention_cpu_isa(p, best_cpu_isa()); }

void bounded_attention_cpu_isa(const BoundedAttentionParams& p, CpuIsa isa) {
  MSTAR_ASSERT(cpu_supports(isa), "bounded_attention_cpu_isa: this processor lacks the instruction set");
  const auto unit = cpu_units(isa).bounded;
  const int32_t H = p.num_kv_heads, D = p.head_dim;
  const int32_t group = p.num_q_heads / H;

  std::vector<int32_t> rows;  // rows that attend (padding rows output zeros)
  int32_t max_qn = 0;
  for (int32_t r = 0; r < p.rows; ++r) {
    const int32_t q_len = p.q_indptr[r + 1] - p.q_indptr[r];
    if (p.table[r].slot != kPaddingRow) {
      rows.push_back(r);
      max_qn = std::max(max_qn, q_len * group);
    } else {
      for (int32_t qt = 0; qt < q_len; ++qt)
        for (int32_t hq = 0; hq < p.num_q_heads; ++hq)
          std::fill_n(p.out + (p.q_indptr[r] + qt) * p.out_token_stride + hq * p.out_head_stride, D, 0.0f);
    }
  }
  const int64_t units = static_cast<int64_t>(rows.size()) * H;

  parallel_for(p.threads, units, [&](int64_t u, int) {
    unit(p, rows[static_cast<size_t>(u / H)], static_cast<int32_t>(u % H), thread_scratch(max_qn, D));
  });
}

void bounded_store_host(const BoundedStoreParams& p) {
  const int32_t D = p.head_dim;
  const auto es = static_cast<int64_t>(row_bytes(p.kv_dtype, 1));
  const int64_t units = static_cast<int64_t>(p.rows) * p.num_kv_heads;
  parallel_for(p.threads, units, [&](int64_t u, int) {
    const auto r = static_cast<int32_t>(u / p.num_kv_heads), h = static_cast<int32_t>(u % p.num_kv_heads);
    const BoundedRowTable& t = p.table[r];
    if (t.slot == kPaddingRow) return;
    const BoundedRowAddress& a = p.address[r];
    const int32_t kv0 = p.kv_indptr[r];
    int64_t at = p.scratch_start;  // the kept entries, back to back, in write order
    for (const KVWrite& w : t.writes)
      for (int32_t i = 0; i < w.len; ++i, ++at) {
        const int32_t j = w.fresh + i * w.fresh_step;
        void* e = entry(a.slot, a.slot_head_stride, h, at, D, es);
        const float* kk = p.k + (kv0 + j) * p.kv_token_stride + h * p.kv_head_stride;
        const float* vv = p.v + (kv0 + j) * p.kv_token_stride + h * p.kv_head_stride;
        for (int32_t d = 0; d < D; ++d) {
          store_from_f32(e, p.kv_dtype, static_cast<size_t>(d), kk[d]);
          store_from_f32(e, p.kv_dtype, static_cast<size_t>(D + d), vv[d]);
        }
      }
  });
}

void bounded_commit_host(const BoundedCommitParams& p) {
  const int32_t D = p.head_dim;
  const auto es = static_cast<int64_t>(row_bytes(p.kv_dtype, 1));
  const int64_t units = static_cast<int64_t>(p.rows) * p.num_kv_heads;
  parallel_for(p.threads, units, [&](int64_t u, int) {
    const auto r = static_cast<int32_t>(u / p.num_kv_heads), h = static_cast<int32_t>(u % p.num_kv_heads);
    const BoundedRowTable& t = p.table[r];
    if (t.slot == kPaddingRow) return;
    const BoundedRowAddress& a = p.address[r];
    int64_t at = p.scratch_start;
    for (const KVWrite& w : t.writes) {
      if (w.len == 0) continue;
      // The scratch and the write range never overlap: the scratch lies past
      // every sink and ring offset.
      std::memcpy(entry(a.slot, a.slot_head_stride, h, w.start, D, es), entry(a.slot, a.slot_head_stride, h, at, D, es),
                  static_cast<size_t>(w.len) * 2 * static_cast<size_t>(D) * static_cast<size_t>(es));
      at += w.len;
    }
  });
}

}  // namespace mstar::kernels

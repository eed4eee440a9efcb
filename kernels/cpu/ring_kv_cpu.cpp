// The cpu backend for the ring ops: attention as (row, KV head) units over
// the pool's threads, each reading only its row's visible runs; upsert is a copy
// on the host, shared with the reference backend.
#include "core/errors.h"
#include "kernels/cpu/attention_cpu.h"
#include "kernels/cpu/thread_pool.h"

namespace mstar::kernels {

void ring_attention_cpu(const RingAttentionParams& p) { ring_attention_cpu_isa(p, best_cpu_isa()); }

void ring_attention_cpu_isa(const RingAttentionParams& p, CpuIsa isa) {
  MSTAR_ASSERT(cpu_supports(isa), "ring_attention_cpu_isa: this processor lacks the instruction set");
  const auto unit = cpu_units(isa).ring;
  const int32_t H = p.num_kv_heads;
  const int32_t qn = p.q_tokens * (p.num_q_heads / H);
  const int64_t units = static_cast<int64_t>(p.rows) * H;
  parallel_for(p.threads, units, [&](int64_t u, int) {
    unit(p, static_cast<int32_t>(u / H), static_cast<int32_t>(u % H), thread_scratch(qn, p.head_dim));
  });
}

void ring_upsert_host(const RingUpsertParams& p) {
  const int64_t D = p.head_dim, T = p.tokens, H = p.num_kv_heads;
  const int64_t units = static_cast<int64_t>(p.rows) * H;
  parallel_for(p.threads, units, [&](int64_t u, int) {
    const int64_t b = u / H, h = u % H;
    const int64_t ring = p.ring_start ? p.ring_start[b] : -1;
    for (int64_t plane = 0; plane < 2; ++plane) {
      const float* src = plane == 0 ? p.k : p.v;
      for (int64_t t = 0; t < T; ++t) {
        const float* x = src + (b * T + t) * p.token_stride + h * p.head_stride;
        for (int64_t dst : {p.scratch_start[b], ring}) {  // always the scratch frame first
          if (dst < 0) continue;
          const auto at = static_cast<size_t>(((plane * H + h) * p.total_slots + dst + t) * D);
          for (int64_t d = 0; d < D; ++d) store_from_f32(p.kv, p.kv_dtype, at + static_cast<size_t>(d), x[d]);
        }
      }
    }
  });
}

}  // namespace mstar::kernels

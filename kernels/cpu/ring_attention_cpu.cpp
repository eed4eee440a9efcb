// The cpu backend for ring attention: (row, KV head) units over OpenMP
// threads, each reading only its row's session span.
#include "core/errors.h"
#include "cpu/attention_cpu.h"

namespace mstar::kernels {

void ring_attention_cpu(const RingAttentionParams& p) { ring_attention_cpu_isa(p, best_cpu_isa()); }

void ring_attention_cpu_isa(const RingAttentionParams& p, CpuIsa isa) {
  MSTAR_ASSERT(cpu_supports(isa), "ring_attention_cpu_isa: this processor lacks the instruction set");
  const auto unit = isa == CpuIsa::avx2 ? &avx2::ring_unit : &generic::ring_unit;
  const int32_t H = p.num_kv_heads;
  const int32_t qn = p.q_tokens * (p.num_q_heads / H);
  const int64_t units = static_cast<int64_t>(p.rows) * H;
#pragma omp parallel num_threads(p.threads) if (units > 1)
  {
    const CpuScratchBuffer scratch(qn, p.head_dim);
#pragma omp for schedule(dynamic, 1)
    for (int64_t u = 0; u < units; ++u) unit(p, static_cast<int32_t>(u / H), static_cast<int32_t>(u % H), scratch.get());
  }
}

}  // namespace mstar::kernels

// The cpu backend's table: per-ISA bodies on one thread pool. Layer norm and
// the GELU activations, which no shipped family runs, take the reference's
// loops until a family needs them fast.
#include "kernels/cpu/isa.h"
#include "kernels/op_table.h"

namespace mstar::kernels {

namespace {

// Pair panels where the best instruction set is avx512 or avx512_bf16
// (measured faster there with `mstar-bench matmul`); amx_bf16's tiles read
// rows (matmul_cpu.h); avx2 and generic were not measured with panels.
WeightLayout cpu_layout(DType w, int64_t in) {
  if (!layout_fits(WeightLayout::pair_panels, w, in)) return WeightLayout::rows;
  const CpuIsa isa = best_cpu_isa();
  return has_avx512(isa) && isa != CpuIsa::amx_bf16 ? WeightLayout::pair_panels : WeightLayout::rows;
}

}  // namespace

const OpTable& cpu_op_table() {
  static const OpTable t = [] {
    OpTable o{Backend::cpu};
    o.host_memory = true;
    o.takes_weights = is_builtin;  // the floats, and ggml's block types (a registered type: no body here)
    o.bf16_activations = true;
    o.q8_0_activations = true;
    o.pair_panels = true;
    o.preferred_layout = cpu_layout;
    o.matmul = matmul_cpu;
    o.matmul_group = matmul_group_cpu;
    o.release_weights = release_weights_cpu;
    o.rmsnorm = rmsnorm_cpu;
    o.silu_mul = silu_mul_cpu;
    o.layer_norm = layer_norm_reference;
    o.activate = activate_reference;
    o.rope = rope_cpu;
    o.embed = embed_host;
    o.gather_rows = gather_rows_host;
    o.add_rows = add_rows_host;
    o.lerp = lerp_host;
    o.bounded_attention = bounded_attention_cpu;
    o.bounded_store = bounded_store_host;
    o.bounded_commit = bounded_commit_host;
    o.ring_upsert = ring_upsert_host;
    o.ring_attention = ring_attention_cpu;
    return o;
  }();
  return t;
}

}  // namespace mstar::kernels

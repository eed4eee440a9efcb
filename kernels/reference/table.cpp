// The reference backend's table: plain loops, the oracle. Its products read
// any dtype in the traits table (each weight row converted to f32 by the
// type's to_f32), so a new dtype is testable before any fast body exists.
#include "kernels/op_table.h"

namespace mstar::kernels {

const OpTable& reference_op_table() {
  static const OpTable t = [] {
    OpTable o{Backend::reference};
    o.host_memory = true;
    o.takes_weights = [](DType) { return true; };
    o.bf16_activations = true;
    o.q8_0_activations = true;
    o.pair_panels = true;
    o.preferred_layout = [](DType, int64_t) { return WeightLayout::rows; };
    o.matmul = matmul_reference;
    o.rmsnorm = rmsnorm_reference;
    o.silu_mul = silu_mul_reference;
    o.layer_norm = layer_norm_reference;
    o.activate = activate_reference;
    o.rope = rope_reference;
    o.embed = embed_host;
    o.gather_rows = gather_rows_host;
    o.add_rows = add_rows_host;
    o.lerp = lerp_host;
    o.bounded_attention = bounded_attention_reference;
    o.bounded_store = bounded_store_host;
    o.bounded_commit = bounded_commit_host;
    o.ring_upsert = ring_upsert_host;
    o.ring_attention = ring_attention_reference;
    return o;
  }();
  return t;
}

}  // namespace mstar::kernels

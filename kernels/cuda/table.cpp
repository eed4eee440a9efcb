// The cuda backend's table: f32 activations, row-major weights (cuBLAS and
// hand-written products), every op enqueued on the backend's stream.
#include "kernels/cuda/cuda_ops.h"
#include "kernels/op_table.h"

namespace mstar::kernels {

const OpTable& cuda_op_table() {
  static const OpTable t = [] {
    OpTable o{Backend::cuda};
    o.takes_weights = is_builtin;  // the floats, and ggml's block types (a registered type: no body here)
    o.bf16_activations = false;
    o.q8_0_activations = false;
    o.pair_panels = false;
    o.preferred_layout = [](DType, int64_t) { return WeightLayout::rows; };
    o.matmul = matmul_cuda;
    o.rmsnorm = rmsnorm_cuda;
    o.silu_mul = silu_mul_cuda;
    o.rope = rope_cuda;
    o.embed = embed_cuda;
    o.gather_rows = gather_rows_cuda;
    o.add_rows = add_rows_cuda;
    o.lerp = lerp_cuda;
    o.bounded_attention = bounded_attention_cuda;
    o.bounded_store = bounded_store_cuda;
    o.bounded_commit = bounded_commit_cuda;
    o.ring_upsert = ring_upsert_cuda;
    o.ring_attention = ring_attention_cuda;
    return o;
  }();
  return t;
}

}  // namespace mstar::kernels

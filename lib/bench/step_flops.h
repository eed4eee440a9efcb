#pragma once
// The arithmetic of one decoded token of a llama or qwen2 decoder
// (docs/hf-decoders.md): the multiply-adds of its matrix products, x 2 (the
// convention of mstar-bench matmul's gflops). Per layer: q (width ->
// heads x head_dim), k and v (width -> kv_heads x head_dim each), o (back to
// width), the MLP's gate and up (width -> mlp_width each) and down; then the
// logits (width -> vocab). Biases, norms, rope and the MLP's gating are
// elementwise and left out, and so is attention's q.k and p.v, which grows
// with the context: in mstar-bench checkpoint's sweep (the 64-token voice, 16
// prompt tokens and the tokens decoded, at most 4 sinks + the window) it is
// about 1% of the products' at the defaults (Qwen2.5-0.5B, 144 entries: 12
// against 988 MFLOP), more with more --tokens.
#include <cstdint>

#include "models/architecture.h"

namespace mstar::bench {

double decode_product_flops(const TrunkShape& t, int64_t vocab);

}  // namespace mstar::bench

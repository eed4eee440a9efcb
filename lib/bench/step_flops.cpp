#include "bench/step_flops.h"

namespace mstar::bench {

double decode_product_flops(const TrunkShape& t, int64_t vocab) {
  const int64_t attn = t.heads * t.head_dim, kv = t.kv_heads * t.head_dim;
  const int64_t layer = t.width * attn + 2 * t.width * kv + attn * t.width + 3 * t.width * t.mlp_width;
  return 2.0 * static_cast<double>(t.layers * layer + t.width * vocab);
}

}  // namespace mstar::bench

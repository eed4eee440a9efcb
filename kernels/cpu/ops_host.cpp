// The trunk's copies and sums on the host, shared by the reference and cpu
// backends: plain loops, memory bound, nothing to gain from a second copy.
#include <cstring>

#include "kernels/ops.h"

namespace mstar::kernels {

namespace {

// Row o of a bf16 pair_panels table [vocab, width] (weight_layout.h): its
// pairs lie n pairs apart in its panel, n the panel's width.
void pair_panel_row(const EmbedParams& p, int64_t o, float* out) {
  const int64_t t = o / kPairPanelCols, c = o % kPairPanelCols;
  const int64_t n = p.vocab - t * kPairPanelCols < kPairPanelCols ? p.vocab - t * kPairPanelCols : kPairPanelCols;
  const uint32_t* pairs = static_cast<const uint32_t*>(p.table) + t * kPairPanelCols * (p.width / 2) + c;
  for (int64_t kp = 0; kp < p.width / 2; ++kp) {
    const uint32_t pair = pairs[kp * n];
    const uint32_t lo = pair << 16, hi = pair & 0xFFFF0000u;
    std::memcpy(out + 2 * kp, &lo, sizeof lo);
    std::memcpy(out + 2 * kp + 1, &hi, sizeof hi);
  }
}

}  // namespace

void embed_host(const EmbedParams& p) {
  for (int64_t t = 0; t < p.tokens; ++t) {
    float* out = p.out + t * p.width;
    if (p.layout == WeightLayout::pair_panels) {
      pair_panel_row(p, p.ids[t], out);
      continue;
    }
    // Any row of the traits, block types too: the dispatcher saw whole blocks.
    dtype_traits(p.dtype).to_f32(
        static_cast<const unsigned char*>(p.table) + row_bytes(p.dtype, static_cast<int64_t>(p.ids[t]) * p.width), out,
        p.width);
  }
}

void gather_rows_host(const GatherRowsParams& p) {
  for (int64_t r = 0; r < p.rows; ++r)
    std::memcpy(p.out + r * p.width, p.x + static_cast<int64_t>(p.index[r]) * p.width,
                static_cast<size_t>(p.width) * sizeof(float));
}

void add_rows_host(const AddRowsParams& p) {
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* y = p.y + (r / p.group) * p.width;
    float* x = p.x + r * p.width;
    for (int64_t i = 0; i < p.width; ++i) x[i] += y[i];
  }
}

void lerp_host(const LerpParams& p) {
  for (int64_t i = 0; i < p.n; ++i) p.x[i] += (p.y[i] - p.x[i]) * p.s;
}

}  // namespace mstar::kernels

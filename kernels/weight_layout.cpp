#include "weight_layout.h"

#include <algorithm>
#include <vector>

#include "core/errors.h"
#include "kernels/op_table.h"

namespace mstar::kernels {

float matrix_element(const void* w, DType dtype, WeightLayout layout, int64_t out, int64_t in, int64_t o, int64_t k) {
  const int64_t i = layout == WeightLayout::rows ? o * in + k : pair_panel_index(o, k, out, in);
  return load_as_f32(w, dtype, static_cast<std::size_t>(i));
}

bool layout_fits(WeightLayout layout, DType dtype, int64_t in) {
  return layout == WeightLayout::rows || (dtype == DType::bf16 && in % 2 == 0);
}

WeightLayout matmul_layout(Backend b, DType dtype, int64_t in) {
  return op_table(b, "matmul_layout").preferred_layout(dtype, in);
}

namespace {

// Each panel through a copy of its bytes: `to_panels` from rows, else back.
// k pairs outer, columns inner: the side read or written a pair per column
// then touches n cache lines, each for 16 pairs running, not the whole
// panel for every pair (columns outer took 2 s of a 3 s load of the
// Qwen2.5-0.5B-shaped checkpoint).
void rearrange(uint16_t* w, int64_t out, int64_t in, bool to_panels) {
  MSTAR_ASSERT(in % 2 == 0, "pair panels: in is even");
  const int64_t P = in / 2;
  std::vector<uint16_t> copy(static_cast<std::size_t>(kPairPanelCols * in));  // [n, in] or [P, n] pairs
  for (int64_t o0 = 0; o0 < out; o0 += kPairPanelCols) {
    const int64_t n = std::min(kPairPanelCols, out - o0);
    uint16_t* panel = w + o0 * in;
    std::copy_n(panel, n * in, copy.data());
    for (int64_t kp = 0; kp < P; ++kp)
      for (int64_t c = 0; c < n; ++c) {
        const auto row = static_cast<std::size_t>(c * in + 2 * kp), pair = static_cast<std::size_t>((kp * n + c) * 2);
        if (to_panels)
          std::copy_n(copy.data() + row, 2, panel + pair);
        else
          std::copy_n(copy.data() + pair, 2, panel + row);
      }
  }
}

}  // namespace

void rows_to_pair_panels(uint16_t* w, int64_t out, int64_t in) { rearrange(w, out, in, true); }
void pair_panels_to_rows(uint16_t* w, int64_t out, int64_t in) { rearrange(w, out, in, false); }

const char* layout_name(WeightLayout layout) { return layout == WeightLayout::rows ? "rows" : "pair_panels"; }

}  // namespace mstar::kernels

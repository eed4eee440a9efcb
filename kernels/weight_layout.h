#pragma once
// How a product's matrix lies in memory (MatmulParams::w_layout), and the
// conversions between the layouts. A matrix [out, in] is row-major as
// stored in a checkpoint; the cpu backend reads bf16 matrices faster as
// pair panels, so a model's weights keep its matrices so (the projections,
// the embedding table, which the lookup reads through the layout, and an
// untied logits head: Weights::arrange_for).
//
// pair_panels, for bf16 with `in` even: panels of kPairPanelCols output
// columns; panel t holds columns [64t, 64t + n), n = min(64, out - 64t), as
// [in / 2, n] 32-bit pairs: pair kp of column c holds row 64t + c's
// elements 2kp (low half) and 2kp + 1 (high half). A body reads a panel
// front to back, one k pair of every column at a time: one broadcast of x
// (a pair, or two f32) feeds four vectors of columns, where reading rows
// needs a load of x for every load of weights. Panel t starts where row 64t
// would: the same bytes, rearranged within each panel, so converting is in
// place and a panel of columns is a slice of the matrix in both layouts.
#include <cstdint>

#include "backend.h"
#include "core/dtype.h"

namespace mstar::kernels {

enum class WeightLayout : unsigned char { rows, pair_panels };

constexpr int64_t kPairPanelCols = 64;

// Where element (o, k) of a pair_panels matrix [out, in] is, in bf16
// elements from its start.
inline int64_t pair_panel_index(int64_t o, int64_t k, int64_t out, int64_t in) {
  const int64_t t = o / kPairPanelCols, c = o % kPairPanelCols;
  const int64_t n = out - t * kPairPanelCols < kPairPanelCols ? out - t * kPairPanelCols : kPairPanelCols;
  return t * kPairPanelCols * in + ((k / 2) * n + c) * 2 + k % 2;
}

// Element (o, k) of w [out, in], in `layout`, widened to f32.
float matrix_element(const void* w, DType dtype, WeightLayout layout, int64_t out, int64_t in, int64_t o, int64_t k);

// Whether a matrix of `dtype` and width `in` can be held in `layout`.
bool layout_fits(WeightLayout layout, DType dtype, int64_t in);

// The layout backend b's products read a matrix of `dtype` and width `in`
// fastest in, as its table declares (OpTable::preferred_layout): pair_panels
// on the cpu backend where its best instruction set is avx512 or
// avx512_bf16 (measured there with `mstar-bench matmul`: docs/PERFORMANCE.md,
// "Pair panels"), else rows. InputError when b is not built.
WeightLayout matmul_layout(Backend b, DType dtype, int64_t in);

// w [out, in] of bf16, rearranged in place from rows to pair_panels, and
// back (layout_fits: in even).
void rows_to_pair_panels(uint16_t* w, int64_t out, int64_t in);
void pair_panels_to_rows(uint16_t* w, int64_t out, int64_t in);

const char* layout_name(WeightLayout layout);  // "rows", "pair_panels"

}  // namespace mstar::kernels

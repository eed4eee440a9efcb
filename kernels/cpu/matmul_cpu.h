#pragma once
// Internal to the cpu backend: the matrix product's per-ISA bodies.
//
// Weights are read in the dtype they are stored in and widened to f32 in
// registers; the arithmetic is f32. Activations are f32 unless the caller
// asks for them rounded to bf16 (MatmulParams::x_dtype): then bf16 weights
// on a processor with AVX512_BF16 take the vdpbf16ps bodies
// (matmul_cpu_bf16.cpp), and everything else multiplies the rounded values
// through the f32 bodies, so every instruction set computes the same
// product.
// Two paths:
// - panels, for few rows (decode: one row per active stream): a panel of
//   output columns is computed for every row while its weights are in cache,
//   so each weight is read from memory once per step however many streams
//   are active;
// - packed, for many rows (prefill: voice prompts, chunks): a panel's weights
//   are widened once into a k-major f32 block and every row is multiplied
//   against it in register tiles, compute bound rather than load bound;
// - tiles, the packed path on AMX (amx_bf16) for bf16 weights and
//   activations rounded to bf16: the block is packed as for vdpbf16ps and
//   multiplied in AMX tiles (tdpbf16ps: 16 x 16 x 32 multiply-adds an
//   instruction). Asked of anything else, the tiles path is the packed one.
// Weights laid out as pair panels (weight_layout.h: a model's bf16
// matrices where kernels::matmul_layout chooses them) take the panels
// path at any number of rows: a pair panel is already the k-major block the
// packed path would build, so one body serves decode and prefill. On
// AVX-512 its tiles broadcast x (a bf16 pair, or two f32) against 4 vectors
// of weights, which reading rows cannot: there every load of weights needs
// a load of x (docs/PERFORMANCE.md, "Pair panels", says by how much that
// measured faster with `mstar-bench matmul`).
#include <cstdint>

#include "kernels/cpu/isa.h"
#include "kernels/ops.h"

namespace mstar::kernels {

enum class MatmulPath : unsigned char { panels, packed, tiles };

// Rows at or under this take the panels, above it the packed path; measured
// with `mstar-bench matmul` (its `panels` and `packed` methods, on a Zen 5
// machine): at 64 rows the AVX-512 panels took 3.7 ms hot against 4.3 packed.
constexpr int64_t kPanelMaxRows = 64;
// The avx2 bodies' boundary, measured lower: on the avx2 machine (Zen 3,
// bf16, 2 threads, 3 alternated rounds of `mstar-bench matmul`) packed
// took 0.78-0.96 of the panels' time at 48 and 56 rows, 0.83-1.00 at 64,
// 0.87-1.02 at 40 and 0.92-1.17 at 32.
constexpr int64_t kPanelMaxRowsAvx2 = 40;
// On amx_bf16, bf16 x bf16 products take the tiles from this many rows.
// Measured with `mstar-bench matmul` (2 threads, two rounds;
// docs/bench/cpu/s16-tiles-direct.md): at 8 rows the tiles took 200 and
// 217-225 µs hot (896 -> 4864, 4864 -> 896) against the panels' 353-362 and
// 355-397, and 362-365 and 355-365 cold against 553-563 and 420-631; at 4
// rows they split: at 896 -> 4864 even hot (186-193 against 189-203) and
// ahead cold (358-365 against 384-391), at 4864 -> 896 behind (207-220
// against 188-197 hot, 347-354 against 300-306 cold).
constexpr int64_t kTilesMinRows = 8;
inline MatmulPath matmul_path(const MatmulParams& p, CpuIsa isa) {
  if (p.w_layout == WeightLayout::pair_panels) return MatmulPath::panels;  // any rows (matmul_panel below)
  if (!is_element_type(p.w_dtype)) return MatmulPath::panels;  // block types: any rows (block_panel)
  if (isa == CpuIsa::amx_bf16 && p.x_dtype == DType::bf16 && p.w_dtype == DType::bf16 && p.rows >= kTilesMinRows)
    return MatmulPath::tiles;
  return p.rows <= (isa == CpuIsa::avx2 ? kPanelMaxRowsAvx2 : kPanelMaxRows) ? MatmulPath::panels
                                                                               : MatmulPath::packed;
}

// Output columns per panel, one task of the pool (the bf16 pair bodies take
// 48 for their 3-column tiles: avx512_bf16::matmul_panel_cols). Wide, so
// few: every task costs a fetch-add on the pool's shared counter (a cache
// line the cores pass back and forth) and a jump in each thread's stream of
// weights. From 16 columns (304 tasks for an 896 -> 4864 product) to 64, the
// bf16 one-row product on 2 threads went from 91-100 to 58-63 µs hot and
// from 213-251 to 136-184 µs cold, and the 16-row one from 327-343 to
// 252-262 µs hot (`mstar-bench matmul --rows 1,4,8,12,16 --threads 2`, 3
// alternated rounds on an idle Zen 5 machine).
constexpr int64_t kPanelCols = 64;
static_assert(kPanelCols == kPairPanelCols, "a panel of the f32 bodies is a pair panel");

// The product with a named instruction set and path (the backend passes
// best_cpu_isa() and matmul_path(p, isa); tests and the benchmark name each).
void matmul_cpu_path(const MatmulParams& p, CpuIsa isa, MatmulPath path);

// One row over pair panels with bf16 activations (a decode step's product,
// bound by the read of its weights) asks for the panel's lines this many k
// pairs ahead (4 KiB), into L2 (locality 1, as the row tiles do). On Zen 4
// the one-stream step took 31.00 against 32.39 ms where the read was 30 to
// 35 GB/s, 28.97 against 30.31 at 35 to 40 and 19.87 against 22.58 at 45
// and up (8 alternated rounds). With f32 activations the same requests
// made it slower: 20.53 against 18.45 ms at 45 and up, on one thread 36.32
// against 32.05 at 35 to 40 (8 rounds of `mstar-bench checkpoint --roofline
// 20`), so that body asks for nothing.
constexpr int64_t kPairAhead = 16;

// Per ISA:
// - matmul_panel: y[:, o0 .. o0 + n) for every row, n <= kPanelCols; with
//   weights as pair panels (weight_layout.h), panel o0 / kPanelCols whole,
//   for any number of rows;
// - matmul_packed_cols: the packed path's columns per task;
// - matmul_packed: y[:, o0 .. o0 + n), n <= matmul_packed_cols(), through
//   `packed` ([in, matmul_packed_cols()] floats of scratch).
// - matmul_panel_q8: as matmul_panel for block-type weights against x
//   quantised to q8_0 (x_dtype q8_0), read from xq ([rows, in / 32] blocks
//   of q8_0) and xsum ([rows, in / 32]: each block's d * sum(codes)), by
//   integer dot products per 32 elements.
// All apply bias and accumulate.
#define MSTAR_MATMUL_BODIES                                                                      \
  void matmul_panel(const MatmulParams& p, int64_t o0, int64_t n);                               \
  int64_t matmul_packed_cols();                                                                  \
  void matmul_packed(const MatmulParams& p, int64_t o0, int64_t n, float* packed);               \
  void matmul_panel_q8(const MatmulParams& p, const unsigned char* xq, const float* xsum, int64_t o0, int64_t n);
namespace generic {
MSTAR_MATMUL_BODIES
}
namespace avx2 {
MSTAR_MATMUL_BODIES
}
namespace avx512 {
MSTAR_MATMUL_BODIES
}
#undef MSTAR_MATMUL_BODIES

// AVX512_BF16, bf16 weights, activations rounded to bf16: `xb` is x rounded,
// [rows, xb_stride] with xb_stride even and each row zero past `in`, so the
// bodies may read whole pairs. Packed scratch: [(in + 1) / 2,
// matmul_packed_cols()] pairs.
namespace avx512_bf16 {
void round_to_bf16(const float* x, int64_t n, uint16_t* out);  // f32_to_bf16 of each
// Output columns per panel (one pool task) of p: kPanelCols, or 48 where
// the body takes 3-column tiles (rows, not pair panels, from 16 rows).
int64_t matmul_panel_cols(const MatmulParams& p);
void matmul_panel(const MatmulParams& p, const uint16_t* xb, int64_t xb_stride, int64_t o0, int64_t n);
int64_t matmul_packed_cols();
void matmul_packed(const MatmulParams& p, const uint16_t* xb, int64_t xb_stride, int64_t o0, int64_t n,
                   uint32_t* packed);
// The n (<= matmul_packed_cols()) weight rows from o0 as k-pair-major
// blocks: packed[kp * cols + c] holds row o0 + c's elements 2kp (low half)
// and 2kp + 1, for kp < pairs (>= (in + 1) / 2); zeros past the matrix.
void pack(const MatmulParams& p, int64_t o0, int64_t n, int64_t pairs, uint32_t* packed);
}  // namespace avx512_bf16

// AMX-BF16, bf16 weights, activations rounded to bf16, as avx512_bf16's
// packed path but with `xb` padded further: xb_stride a multiple of
// kTileK (whole 64-byte tile rows, zero past `in`) and rows up to a
// multiple of 16 (zero past p.rows). Scratch: [xb_stride / 2,
// matmul_tile_cols()] pairs. Every call configures the calling thread's
// tiles and releases them.
namespace amx_bf16 {
constexpr int64_t kTileK = 32;  // bf16 elements of k per tile row (64 bytes)
int64_t matmul_tile_cols();
void matmul_tiles(const MatmulParams& p, const uint16_t* xb, int64_t xb_stride, int64_t o0, int64_t n,
                  uint32_t* packed);
// Where `in` is a multiple of kTileK, the weights need no packing: tiles of
// 16 weight rows load straight from them (64 bytes of each row, at its
// stride), x is packed once for every task instead, and each tile of sums
// comes out with columns and rows swapped (y^T = W x^T), turned round in
// registers as it is stored. `xv`: x rounded, 32 rows a group (the last one
// zero past p.rows), each group as avx512_bf16::pack lays out 32 weight
// rows: [groups][in / 2][32] pairs. y[:, o0 .. o0 + 32), o0 + 32 <= out.
void matmul_tiles_direct(const MatmulParams& p, const uint32_t* xv, int64_t o0);
}  // namespace amx_bf16

}  // namespace mstar::kernels

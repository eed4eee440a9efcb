// The products on AMX tiles (amx_bf16): bf16 weights, activations rounded
// to bf16. tdpbf16ps multiplies a tile of 16 rows x 32 bf16 of x by a tile of
// 16 pairs x 16 columns of weights into 16 x 16 f32 sums, 8,192
// multiply-adds an instruction against vdpbf16ps's 32. Each pair's products
// are exact in f32 and summed in f32 (round to nearest even; bf16 denormals
// read as zero, as vdpbf16ps reads them), so the result is the product of
// the rounded activations within f32 summation error, the same contract as
// the avx512_bf16 bodies (matmul_cpu_bf16.cpp).
//
// Two bodies, each taking every 32 rows x 32 columns of y in four tiles of
// sums, 2 + 2 operand tiles per 32 elements of k feeding 4 tdpbf16ps:
// - matmul_tiles_direct, where `in` is a multiple of 32: the weights are
//   the first operand, 16 rows of them loaded as a tile straight from
//   memory, and x (packed once a call) the second, so the sums come out
//   transposed (y^T = W x^T) and are turned round as they are stored;
// - matmul_tiles, for any `in`: a task's 32 columns of weights are packed
//   first (avx512_bf16::pack: one pair a 32-bit lane, 32 lanes a pair row,
//   the layout a tile of 16 columns reads at a row stride of 128 bytes) and
//   x's rows are the first operand.
#include <algorithm>
#include <iterator>

#include "core/errors.h"
#include "kernels/cpu/matmul_cpu.h"
#include "kernels/cpu/peak_cpu.h"

#if defined(__x86_64__)
#include <immintrin.h>
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,amx-tile,amx-bf16")
#if defined(__clang__)
#pragma clang attribute push(                                                                                    \
    __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,amx-tile,amx-bf16"))), \
    apply_to = function)
#endif
// GCC's own AVX-512 headers trip these in the transpose (as in matmul_cpu_bf16.cpp).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/cpu/transpose16.inc"

namespace mstar::kernels::amx_bf16 {

namespace {

constexpr int64_t kCols = 32;  // a task's columns: two weight tiles of 16
constexpr int kTileRows = 16;  // rows of every tile (x rows, weight pairs, sums)

// The tile configuration ldtilecfg reads (palette 1): 64 bytes.
struct TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of each tile
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// Tiles 0-3: sums; 4-5: the first operand; 6-7: the second (each body says
// which is which). Every tile is 16 rows of 64 bytes: k comes in whole
// steps of kTileK (the packed operands are zero to there, and the direct
// body needs `in` a multiple of it), so no tile is ever partial.
void configure() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.colsb[t] = 64;
    c.rows[t] = kTileRows;
  }
  _tile_loadconfig(&c);
}

// y[r0 + i, o0 + c] for the valid rows (i < rows) and columns (c < n) from
// the sums s[i][c] ([rows, 32] floats, 64-byte aligned), with the bias and
// y's old value as store_row in matmul_cpu_bf16.cpp adds them.
void store(const MatmulParams& p, const float* s, int64_t r0, int64_t rows, int64_t o0, int64_t n) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t h = 0; h < kCols && h < n; h += 16) {
      const int64_t left = n - h;
      const __mmask16 m = left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1);
      __m512 v = _mm512_load_ps(s + i * kCols + h);
      if (p.bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, p.bias + o0 + h));
      float* y = p.y + (r0 + i) * p.y_stride + o0 + h;
      if (p.accumulate) v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, y), v);
      _mm512_mask_storeu_ps(y, m, v);
    }
}

// y[r0 + i, o0 + c] for i < rows (<= 16) and c < 16 from a tile of sums
// held the other way round, s[c][i] ([16, 16] floats, 64-byte aligned).
void store_transposed(const MatmulParams& p, const float* s, int64_t r0, int64_t rows, int64_t o0) {
  __m512i in[16], out[16];
  for (int c = 0; c < 16; ++c) in[c] = _mm512_load_si512(s + 16 * c);
  avx512_transpose::transpose16(in, out);
  const __m512 bias = p.bias ? _mm512_loadu_ps(p.bias + o0) : _mm512_setzero_ps();
  for (int64_t i = 0; i < rows; ++i) {
    float* y = p.y + (r0 + i) * p.y_stride + o0;
    __m512 v = _mm512_add_ps(_mm512_castsi512_ps(out[i]), bias);
    if (p.accumulate) v = _mm512_add_ps(_mm512_loadu_ps(y), v);
    _mm512_storeu_ps(y, v);
  }
}

}  // namespace

int64_t matmul_tile_cols() { return kCols; }

void matmul_tiles_direct(const MatmulParams& p, const uint32_t* xv, int64_t o0) {
  MSTAR_ASSERT(p.in % kTileK == 0 && o0 + kCols <= p.out, "matmul_tiles_direct: whole tiles of weights");
  MSTAR_ASSERT(p.w_layout == WeightLayout::rows, "matmul_tiles_direct: rows of weights");
  const int64_t K = p.in, ws = K * 2;
  const auto* w = static_cast<const uint16_t*>(p.w) + o0 * K;
  const int64_t padded_rows = (p.rows + kTileRows - 1) / kTileRows * kTileRows;
  configure();
  alignas(64) float sums[4][kTileRows * 16];  // tile t: [16 columns, 16 rows]
  // Tiles 4-5: weight rows 0-15 and 16-31 of the task; 6-7: x rows 0-15 and
  // 16-31 of the group.
  for (int64_t r = 0; r < padded_rows; r += 2 * kTileRows) {
    const uint32_t* x = xv + r / (2 * kTileRows) * (K / 2) * kCols;  // this group's pairs: [K / 2, 32 rows]
    if (r + 2 * kTileRows <= padded_rows) {
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int64_t k = 0; k < K; k += kTileK) {
        _tile_loadd(4, w + k, ws);
        _tile_loadd(5, w + kTileRows * K + k, ws);
        _tile_loadd(6, x + k / 2 * kCols, kCols * 4);
        _tile_loadd(7, x + k / 2 * kCols + 16, kCols * 4);
        _tile_dpbf16ps(0, 4, 6);  // columns 0-15, rows 0-15
        _tile_dpbf16ps(1, 4, 7);  // columns 0-15, rows 16-31
        _tile_dpbf16ps(2, 5, 6);  // columns 16-31, rows 0-15
        _tile_dpbf16ps(3, 5, 7);  // columns 16-31, rows 16-31
      }
      _tile_stored(0, sums[0], 64);
      _tile_stored(1, sums[1], 64);
      _tile_stored(2, sums[2], 64);
      _tile_stored(3, sums[3], 64);
      const int64_t top = std::min<int64_t>(kTileRows, p.rows - r);
      const int64_t bottom = std::min<int64_t>(kTileRows, p.rows - r - kTileRows);
      store_transposed(p, sums[0], r, top, o0);
      store_transposed(p, sums[2], r, top, o0 + 16);
      if (bottom > 0) {
        store_transposed(p, sums[1], r + kTileRows, bottom, o0);
        store_transposed(p, sums[3], r + kTileRows, bottom, o0 + 16);
      }
    } else {  // the last 16 rows
      _tile_zero(0);
      _tile_zero(2);
      for (int64_t k = 0; k < K; k += kTileK) {
        _tile_loadd(4, w + k, ws);
        _tile_loadd(5, w + kTileRows * K + k, ws);
        _tile_loadd(6, x + k / 2 * kCols, kCols * 4);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(2, 5, 6);
      }
      _tile_stored(0, sums[0], 64);
      _tile_stored(2, sums[2], 64);
      store_transposed(p, sums[0], r, p.rows - r, o0);
      store_transposed(p, sums[2], r, p.rows - r, o0 + 16);
    }
  }
  _tile_release();
}

void matmul_tiles(const MatmulParams& p, const uint16_t* xb, int64_t xb_stride, int64_t o0, int64_t n,
                  uint32_t* packed) {
  MSTAR_ASSERT(xb_stride % kTileK == 0 && xb_stride >= p.in, "matmul_tiles: x padded to whole tile rows");
  MSTAR_ASSERT(n >= 1 && n <= kCols, "matmul_tiles: a task's columns");
  const int64_t K = xb_stride, xs_bytes = xb_stride * 2;
  avx512_bf16::pack(p, o0, n, K / 2, packed);
  configure();
  alignas(64) float sums[2 * kTileRows * kCols];  // [32 rows, 32 columns]
  const int64_t padded_rows = (p.rows + kTileRows - 1) / kTileRows * kTileRows;
  // Tiles 0-3: sums of rows (0-15 | 16-31) x columns (0-15 | 16-31) as 2r + c;
  // 4-5: x rows 0-15 and 16-31; 6-7: packed weights, columns 0-15 and 16-31.
  int64_t r = 0;
  for (; r + 2 * kTileRows <= padded_rows; r += 2 * kTileRows) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    const uint16_t* x = xb + r * xb_stride;
    for (int64_t k = 0; k < K; k += kTileK) {
      _tile_loadd(4, x + k, xs_bytes);
      _tile_loadd(5, x + kTileRows * xb_stride + k, xs_bytes);
      _tile_loadd(6, packed + k / 2 * kCols, kCols * 4);
      _tile_loadd(7, packed + k / 2 * kCols + 16, kCols * 4);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, sums, kCols * 4);
    _tile_stored(1, sums + 16, kCols * 4);
    _tile_stored(2, sums + kTileRows * kCols, kCols * 4);
    _tile_stored(3, sums + kTileRows * kCols + 16, kCols * 4);
    store(p, sums, r, std::min<int64_t>(2 * kTileRows, p.rows - r), o0, n);
  }
  if (r < padded_rows) {  // the last 16 rows: two sums
    _tile_zero(0);
    _tile_zero(1);
    const uint16_t* x = xb + r * xb_stride;
    for (int64_t k = 0; k < K; k += kTileK) {
      _tile_loadd(4, x + k, xs_bytes);
      _tile_loadd(6, packed + k / 2 * kCols, kCols * 4);
      _tile_loadd(7, packed + k / 2 * kCols + 16, kCols * 4);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
    }
    _tile_stored(0, sums, kCols * 4);
    _tile_stored(1, sums + 16, kCols * 4);
    store(p, sums, r, p.rows - r, o0, n);
  }
  _tile_release();
}

// The x tiles hold bf16 1/64, the weight tiles 1/2: each tdpbf16ps adds 32
// products of 1/128 to every sum, 1/4, exactly while a sum stays under 2^16
// (262,144 rounds; the test runs 100). Four chains: tdpbf16ps issues one a
// 16 cycles, and four of them cover its latency (Intel's optimization
// manual gives 52 cycles on Sapphire Rapids).
PeakRun tile_peak_loop(int64_t rounds) {
  alignas(64) uint16_t x[kTileRows * 32], w[kTileRows * 32];
  std::fill(std::begin(x), std::end(x), uint16_t{0x3c80});  // bf16 1/64
  std::fill(std::begin(w), std::end(w), uint16_t{0x3f00});  // bf16 1/2
  configure();
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, x, 64);
  _tile_loadd(5, x, 64);
  _tile_loadd(6, w, 64);
  _tile_loadd(7, w, 64);
  for (int64_t r = 0; r < rounds; ++r) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  alignas(64) float sums[4][kTileRows * 16];
  _tile_stored(0, sums[0], 64);
  _tile_stored(1, sums[1], 64);
  _tile_stored(2, sums[2], 64);
  _tile_stored(3, sums[3], 64);
  _tile_release();
  float sum = 0.0f;
  for (const auto& t : sums)
    for (float v : t) sum += v;
  return {4.0 * 2 * kTileRows * 16 * 32 * static_cast<double>(rounds), sum};
}

}  // namespace mstar::kernels::amx_bf16

#if defined(__clang__)
#pragma clang attribute pop
#endif
#pragma GCC pop_options
#endif  // off x86-64 nothing here: the dispatcher never names these bodies there

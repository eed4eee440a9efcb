// The matrix product with activations rounded to bf16 (MatmulParams::x_dtype)
// over bf16 weights, for processors with AVX512_BF16: vdpbf16ps multiplies
// 32 bf16 pairs and adds them into 16 f32 lanes, twice the multiply-adds of
// an f32 FMA and no widening of the weights. Each pair's products are exact
// in f32 and summed in f32 (round to nearest even; the instruction treats
// bf16 denormals as zero), so the result is the exact product of the rounded
// activations and the weights within f32 summation error: the reference
// rounds the same way (ops_reference.cpp) and the tests hold the two to the
// f32 product's tolerance.
//
// Same structure as matmul_cpu_impl.inc (panels for few rows, packed tiles
// for many); what differs is the unit of k: a pair of bf16 in one 32-bit lane.
#include <algorithm>

#include "core/dtype.h"
#include "core/errors.h"
#include "kernels/cpu/matmul_cpu.h"

#if defined(__x86_64__)
#include <immintrin.h>
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16"))), \
                             apply_to = function)
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/cpu/transpose16.inc"

namespace mstar::kernels::avx512_bf16 {

namespace {

// Panels (one row: row_stream, below), two register tiles of 24
// accumulators, each with its weight vectors and one input vector (29 or 28
// of the 32 registers):
// - under kWideFrom rows, 4 weight rows x 6 input rows: 10 loads feed 24
//   vdpbf16ps (the f32 panels' 4 x 4 fed 16 with 8), and at 16 rows (6 + 6 +
//   4) a cold 896 x 4864 product went from about 600 to 530-550 µs;
// - from kWideFrom rows, 3 weight rows x 8 input rows: 11 loads feed 24, and
//   16 rows take two row tiles instead of three, so each weight vector is
//   loaded from L1 twice, not three times. At 16 rows, 2 threads, it took
//   the cold 896 x 4864 product from 324-343 to 281-334 µs (3 alternated
//   rounds, idle machine; at 8 and 12 rows the 4 x 6 tile was as fast or
//   faster, so it keeps them).
// A panel (one pool task) is a whole number of column tiles and of 64-byte
// lines of y: 64 columns, or 48 for the 3 x 8 tiles (matmul_cpu.h says why
// panels are that wide).
constexpr int kCols = 4, kRows = 6;
constexpr int kWideCols = 3, kWideRows = 8;
constexpr int64_t kWideFrom = 16;
// From kWideFrom rows a panel runs in blocks of at most kBlockK elements of
// k, every column tile through one block before the next: the block of the
// rows of xb (16 rows x 1,024 x 2 bytes = 32 KiB) then stays in L1 for all
// the panel's columns. Whole, 16 rows of a 4,864-wide x (152 KiB) came from
// L2 for every column tile: a hot 4864 x 896 product at 16 rows, one thread
// (a niced fuzzer on the other core), went from 249-254 to 266-296 GFLOP/s.
// On 2 threads of the idle machine it measured alike (hot 301-313 against
// 275-346 µs, cold 403-471 against 436-466: three alternated rounds).
constexpr int64_t kBlockK = 1024;
// Packed: kPackedRows rows x 2 vectors of accumulators, 2 weights, 1 broadcast.
constexpr int kPackedRows = 12;
constexpr int kPackedWidth = 32;  // output columns per packed block: 2 vectors of 16 lanes

// 32 bf16 from p, the lanes at or past `left` read as zero (and not read).
inline __m512bh load32(const uint16_t* p, int64_t left) {
  if (left >= 32) return reinterpret_cast<__m512bh>(_mm512_loadu_si512(p));
  const __mmask32 m = left <= 0 ? 0 : static_cast<__mmask32>((uint64_t{1} << left) - 1);
  return reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(m, p));
}

// The sums of four vectors, in one pass of shuffles (four separate
// reductions cost twice the instructions, which at K = 896 is a quarter of a
// tile's: vdpbf16ps halves the loop, not the reductions).
inline __m128 sum4(__m512 a, __m512 b, __m512 c, __m512 d) {
  // Per 128-bit lane: [a0+a2, b0+b2, a1+a3, b1+b3] and the same for c, d.
  const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
  const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
  // Per 128-bit lane: [a, b, c, d] partial sums.
  const __m512 abcd = _mm512_add_ps(
      _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(ab), _mm512_castps_pd(cd))),
      _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(ab), _mm512_castps_pd(cd))));
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(abcd), _mm512_extractf32x8_ps(abcd, 1));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

// s: the sum over k from k0 on; past the first block of k it adds to y,
// which the earlier blocks wrote.
void store_row(const MatmulParams& p, int64_t r, int64_t o, int c, float s, int64_t k0) {
  float& y = p.y[r * p.y_stride + o + c];
  if (k0 > 0) {
    y += s;
    return;
  }
  if (p.bias) s += p.bias[o + c];
  y = p.accumulate ? y + s : s;
}

// y[r0 .. r0 + R, o .. o + C): C weight rows against R rows of xb over k in
// [k0, k1), 32 elements a step; the last step masked, so K need not be a
// multiple of anything.
template <int C, int R>
void tile(const MatmulParams& p, const uint16_t* xb, int64_t xs, int64_t o, int64_t r0, int64_t k0, int64_t k1) {
  const int64_t K = p.in;
  const auto* w = static_cast<const uint16_t*>(p.w);
  __m512 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  // As in the f32 panels: the first row tile asks for the next C weight rows
  // while it streams these (a decode step reads each weight from DRAM once),
  // into L2 (matmul_cpu_impl.inc says why). The later row tiles of the same
  // columns read these rows from L1 and asked for nothing ahead; now they
  // ask for the C rows after the next. At 16 rows on Zen 4 (2 threads,
  // cold, 3 alternated rounds, nothing else running) 896 -> 4864 went from
  // 576-738 to 520-604 us, 4864 -> 896 from 629-856 to 527-610, the logits
  // from 17.3-19.2 to 15.5-17.2 ms, and the Qwen2.5-0.5B-shaped 16-stream
  // step's scaling over one stream from 6.75-7.18 to 8.12-8.44
  // (`mstar-bench matmul --rows 16 --cache cold` and `checkpoint --streams 1,16`).
  const int64_t ahead = r0 == 0 ? C : 2 * C;
  const char* next = o + ahead + C <= p.out ? reinterpret_cast<const char*>(w + (o + ahead) * K) : nullptr;
  const auto step = [&](int64_t k, int64_t left) {
    if (next)
      for (int c = 0; c < C; ++c) __builtin_prefetch(next + (c * K + k) * 2, 0, 1);
    __m512bh wv[C];
    for (int c = 0; c < C; ++c) wv[c] = load32(w + (o + c) * K + k, left);
    for (int r = 0; r < R; ++r) {
      const __m512bh x = load32(xb + (r0 + r) * xs + k, left);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], x, wv[c]);
    }
  };
  int64_t k = k0;
  for (; k + 32 <= k1; k += 32) step(k, 32);  // the constant lets the loads lose their masks
  if (k < k1) step(k, k1 - k);
  for (int r = 0; r < R; ++r) {
    if constexpr (C == 4 || C == 3) {
      float s[4];
      _mm_storeu_ps(s, sum4(acc[r][0], acc[r][1], acc[r][2], C == 4 ? acc[r][C - 1] : _mm512_setzero_ps()));
      for (int c = 0; c < C; ++c) store_row(p, r0 + r, o, c, s[c], k0);
    } else {
      for (int c = 0; c < C; ++c) store_row(p, r0 + r, o, c, _mm512_reduce_add_ps(acc[r][c]), k0);
    }
  }
}

// Every row against columns [o, o + C) over k in [k0, k1): R-row tiles, then the rest.
template <int C, int R>
void columns(const MatmulParams& p, const uint16_t* xb, int64_t xs, int64_t o, int64_t k0, int64_t k1) {
  int64_t r = 0;
  for (; r + R <= p.rows; r += R) tile<C, R>(p, xb, xs, o, r, k0, k1);
  for (; r + 4 <= p.rows; r += 4) tile<C, 4>(p, xb, xs, o, r, k0, k1);
  for (; r + 2 <= p.rows; r += 2) tile<C, 2>(p, xb, xs, o, r, k0, k1);
  for (; r < p.rows; ++r) tile<C, 1>(p, xb, xs, o, r, k0, k1);
}


// y's first row from xb's first (a one-row product): columns one after
// another, so the panel's weights, contiguous, are read as a single stream,
// as the f32 panels' one-row body does (matmul_cpu_impl.inc says why); four
// accumulators over k hide the latency of vdpbf16ps. Against the 4 x 1
// tiles, which read four weight rows at once, the Qwen2.5-0.5B-shaped
// one-stream step measured alike on Zen 4 while only its 4864 -> 896
// products came here (medians 19.85 against 19.90 ms where the read was 45
// GB/s or more, 29.03 against 29.22 at 35 to 40, 20 alternated rounds), and
// faster once every one-row product did (matmul_cpu.cpp says by how much;
// `mstar-bench checkpoint --roofline 20`, grouped by the read).
void row_stream(const MatmulParams& p, const uint16_t* xb, int64_t o0, int64_t n) {
  const int64_t K = p.in;
  const auto* w = static_cast<const uint16_t*>(p.w);
  for (int64_t o = o0; o < o0 + n; ++o) {
    const uint16_t* row = w + o * K;
    __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    int64_t k = 0;
    for (; k + 128 <= K; k += 128)
      for (int u = 0; u < 4; ++u)
        a[u] = _mm512_dpbf16_ps(a[u], load32(xb + k + 32 * u, 32), load32(row + k + 32 * u, 32));
    for (; k < K; k += 32) a[0] = _mm512_dpbf16_ps(a[0], load32(xb + k, K - k), load32(row + k, K - k));
    store_row(p, 0, o, 0, _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3]))), 0);
  }
}

// Weights as pair panels (weight_layout.h): per k pair, the panel's 4
// vectors of 16 pairs against each row's pair of x, broadcast, as the
// packed path's tiles read what pack lays out, here laid out once at load.
// One row runs two k pairs at a time into separate accumulators (8 chains
// of vdpbf16ps, not 4); from 2 rows, R x 4 accumulators, 4 weights and a
// broadcast (29 registers at 6 rows). Columns past n are masked off.
template <int R>
void pair_tile(const MatmulParams& p, const uint16_t* xb, int64_t xs, const uint32_t* panel, int64_t n, int64_t o0,
               int64_t r0) {
  constexpr int A = R == 1 ? 2 : 1;  // k pairs at a time, each into its own accumulators
  const int64_t P = p.in / 2;
  __mmask16 m[4];  // the lanes of each vector that are columns of the panel
  for (int j = 0; j < 4; ++j) {
    const int64_t left = n - 16 * j;
    m[j] = left >= 16 ? static_cast<__mmask16>(0xffff) : left <= 0 ? 0 : static_cast<__mmask16>((1u << left) - 1);
  }
  __m512 acc[R][A][4];
  for (int r = 0; r < R; ++r)
    for (int a = 0; a < A; ++a)
      for (int j = 0; j < 4; ++j) acc[r][a][j] = _mm512_setzero_ps();
  const auto step = [&](int64_t kp, int a) {
    if (R == 1 && kp + kPairAhead < P)
      for (int j = 0; j < 4; ++j) __builtin_prefetch(panel + (kp + kPairAhead) * n + 16 * j, 0, 1);
    __m512bh w[4];
    for (int j = 0; j < 4; ++j)
      w[j] = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi32(m[j], panel + kp * n + 16 * j));
    for (int r = 0; r < R; ++r) {
      int32_t pair;  // xb's rows are padded to an even length, so the pair is whole
      __builtin_memcpy(&pair, xb + (r0 + r) * xs + 2 * kp, sizeof pair);
      const auto b = reinterpret_cast<__m512bh>(_mm512_set1_epi32(pair));
      for (int j = 0; j < 4; ++j) acc[r][a][j] = _mm512_dpbf16_ps(acc[r][a][j], b, w[j]);
    }
  };
  int64_t kp = 0;
  for (; kp + A <= P; kp += A)
    for (int a = 0; a < A; ++a) step(kp + a, a);
  for (; kp < P; ++kp) step(kp, 0);
  // Every accumulator stored at an index known at compile time first: with
  // acc[r][..][j] read in the loops below, GCC kept the accumulators in
  // memory and stored them on every k (as in the packed tiles), and 16 rows
  // of 4864 -> 896 took twice the row-major panels' time.
  alignas(64) float sums[R][64];
#pragma GCC unroll 32
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j)
      _mm512_store_ps(sums[r] + 16 * j, A == 2 ? _mm512_add_ps(acc[r][0][j], acc[r][A - 1][j]) : acc[r][0][j]);
  for (int r = 0; r < R; ++r) {
    float* y = p.y + (r0 + r) * p.y_stride + o0;
    for (int j = 0; j < 4; ++j) {
      __m512 s = _mm512_load_ps(sums[r] + 16 * j);
      if (p.bias) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m[j], p.bias + o0 + 16 * j));
      if (p.accumulate) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m[j], y + 16 * j));
      _mm512_mask_storeu_ps(y + 16 * j, m[j], s);
    }
  }
}

void pair_panel(const MatmulParams& p, const uint16_t* xb, int64_t xs, int64_t o0, int64_t n) {
  MSTAR_ASSERT(o0 % kPairPanelCols == 0 && n == std::min(kPairPanelCols, p.out - o0),
               "avx512_bf16::matmul_panel: a whole pair panel");
  const auto* panel = static_cast<const uint32_t*>(p.w) + o0 * p.in / 2;
  int64_t r = 0;
  for (; r + kRows <= p.rows; r += kRows) pair_tile<kRows>(p, xb, xs, panel, n, o0, r);
  for (; r + 4 <= p.rows; r += 4) pair_tile<4>(p, xb, xs, panel, n, o0, r);
  for (; r + 2 <= p.rows; r += 2) pair_tile<2>(p, xb, xs, panel, n, o0, r);
  for (; r < p.rows; ++r) pair_tile<1>(p, xb, xs, panel, n, o0, r);
}

}  // namespace

// One pair a 32-bit lane, as vdpbf16ps (and tdpbf16ps) pairs them. A whole
// block is transposed 16 rows x 16 pairs at a time: one pair at a time,
// packing took a third of a 512-token prefill's product time (perf,
// Llama-3.2-1B shape).
void pack(const MatmulParams& p, int64_t o0, int64_t n, int64_t pairs, uint32_t* packed) {
  MSTAR_ASSERT(n >= 1 && n <= kPackedWidth && pairs >= (p.in + 1) / 2, "pack: a block of the matrix's rows and pairs");
  MSTAR_ASSERT(p.w_layout == WeightLayout::rows, "pack: rows of weights (pair panels are packed already)");
  const int64_t K = p.in;
  const auto* w = static_cast<const uint16_t*>(p.w);
  int64_t kp = 0;
  if (n == kPackedWidth)
    for (; 2 * kp + 32 <= K; kp += 16)
      for (int64_t half = 0; half < 2; ++half) {
        __m512i r[16], t[16];
        for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(w + (o0 + 16 * half + i) * K + 2 * kp);
        avx512_transpose::transpose16(r, t);
        for (int i = 0; i < 16; ++i) _mm512_storeu_si512(packed + (kp + i) * kPackedWidth + 16 * half, t[i]);
      }
  for (; kp < pairs; ++kp) {
    uint32_t* dst = packed + kp * kPackedWidth;
    const int64_t k = 2 * kp;
    int64_t c = 0;
    for (; k < K && c < n; ++c) {
      const uint16_t* row = w + (o0 + c) * K;
      const uint32_t hi = k + 1 < K ? row[k + 1] : 0u;
      dst[c] = row[k] | (hi << 16);
    }
    for (; c < kPackedWidth; ++c) dst[c] = 0;
  }
}

namespace {

template <int R>
void packed_tile(const MatmulParams& p, const uint16_t* xb, int64_t xs, const uint32_t* packed, int64_t o0,
                 int64_t n, int64_t r0) {
  const int64_t pairs = (p.in + 1) / 2;
  __m512 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = _mm512_setzero_ps(), acc[r][1] = _mm512_setzero_ps();
  const uint16_t* x = xb + r0 * xs;
  for (int64_t kp = 0; kp < pairs; ++kp) {
    const auto w0 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(packed + kp * kPackedWidth));
    const auto w1 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(packed + kp * kPackedWidth + 16));
    for (int r = 0; r < R; ++r) {
      int32_t pair;  // xb's rows are padded to an even length, so the pair is whole
      __builtin_memcpy(&pair, x + r * xs + 2 * kp, sizeof pair);
      const auto b = reinterpret_cast<__m512bh>(_mm512_set1_epi32(pair));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], b, w0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], b, w1);
    }
  }
  for (int r = 0; r < R; ++r) {
    float out[kPackedWidth];
    _mm512_storeu_ps(out, acc[r][0]);
    _mm512_storeu_ps(out + 16, acc[r][1]);
    for (int64_t c = 0; c < n; ++c) store_row(p, r0 + r, o0, static_cast<int>(c), out[c], 0);
  }
}

}  // namespace

void round_to_bf16(const float* x, int64_t n, uint16_t* out) {
  // f32_to_bf16's arithmetic (core/dtype.h), 16 lanes at a time, so the
  // bodies see bit for bit what the reference rounds to (vcvtneps2bf16 would
  // also round to nearest even, but treats denormal inputs as zero).
  const __m512i half = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1);
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i u = _mm512_loadu_si512(x + i);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs_mask), inf);
    const __m512i up = _mm512_add_epi32(u, _mm512_add_epi32(half, _mm512_and_si512(_mm512_srli_epi32(u, 16), one)));
    const __m512i quiet = _mm512_or_si512(u, _mm512_set1_epi32(0x400000));
    const __m512i r = _mm512_srli_epi32(_mm512_mask_mov_epi32(up, nan, quiet), 16);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm512_cvtepi32_epi16(r));
  }
  for (; i < n; ++i) out[i] = f32_to_bf16(x[i]);
}

int64_t matmul_panel_cols(const MatmulParams& p) {
  if (p.w_layout == WeightLayout::pair_panels) return kPairPanelCols;
  return p.rows >= kWideFrom ? 16 * kWideCols : kPanelCols;
}

void matmul_panel(const MatmulParams& p, const uint16_t* xb, int64_t xb_stride, int64_t o0, int64_t n) {
  if (p.w_layout == WeightLayout::pair_panels) return pair_panel(p, xb, xb_stride, o0, n);
  const int64_t K = p.in;
  if (p.rows == 1) return row_stream(p, xb, o0, n);
  if (p.rows < kWideFrom) {
    int64_t o = o0;
    for (; o + kCols <= o0 + n; o += kCols) columns<kCols, kRows>(p, xb, xb_stride, o, 0, K);
    for (; o < o0 + n; ++o) columns<1, kRows>(p, xb, xb_stride, o, 0, K);
    return;
  }
  // Blocks of k as even as whole steps of 32 allow (4864 -> 5 of 992, the last 896).
  const int64_t blocks = (K + kBlockK - 1) / kBlockK;
  const int64_t kb = ((K + blocks - 1) / blocks + 31) / 32 * 32;
  for (int64_t k0 = 0; k0 < K; k0 += kb) {
    const int64_t k1 = std::min(K, k0 + kb);
    int64_t o = o0;
    for (; o + kWideCols <= o0 + n; o += kWideCols) columns<kWideCols, kWideRows>(p, xb, xb_stride, o, k0, k1);
    for (; o < o0 + n; ++o) columns<1, kRows>(p, xb, xb_stride, o, k0, k1);
  }
}

int64_t matmul_packed_cols() { return kPackedWidth; }

void matmul_packed(const MatmulParams& p, const uint16_t* xb, int64_t xb_stride, int64_t o0, int64_t n,
                   uint32_t* packed) {
  pack(p, o0, n, (p.in + 1) / 2, packed);
  int64_t r = 0;
  for (; r + kPackedRows <= p.rows; r += kPackedRows) packed_tile<kPackedRows>(p, xb, xb_stride, packed, o0, n, r);
  for (; r + 4 <= p.rows; r += 4) packed_tile<4>(p, xb, xb_stride, packed, o0, n, r);
  for (; r < p.rows; ++r) packed_tile<1>(p, xb, xb_stride, packed, o0, n, r);
}

}  // namespace mstar::kernels::avx512_bf16

#if defined(__clang__)
#pragma clang attribute pop
#endif
#pragma GCC pop_options
#endif  // off x86-64 nothing here: the dispatcher never names these bodies there

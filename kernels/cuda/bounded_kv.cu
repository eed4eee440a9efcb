// The CUDA backend for the bounded-KV ops: attention, store and commit, each
// against BoundedAttentionParams / BoundedStoreParams / BoundedCommitParams
// exactly as the reference (reference/bounded_kv_reference.cpp) and the host
// copies (cpu/bounded_kv_cpu.cpp) read them. Every pointer is device memory.
//
// Attention. A *unit* is one row's KV head with the queries that share it:
// the row's q_len tokens times the `group` query heads of that KV head, qn
// query vectors in the cpu backend's order (token-major). Each stored entry
// and each step entry is read once per unit and used by every query of a
// chunk (below), so grouped-query heads cost one read of the KV, not `group`.
//
// The host cannot size the work from the tables: they, q_indptr and
// kv_indptr are device memory, and reading them back would stall the stream
// once per layer. So the work is planned on the device:
//   plan      one block reads each row's table and indptrs, and counts its
//             work items: (KV head, query chunk, split). A query chunk is QC
//             query vectors (QC = 4, 8 or 16, from `group`, the one template
//             parameter). A row whose whole unit fits one chunk (decode) is
//             split along its visible sequence every kSplitKeys entries, up
//             to kMaxSplits splits (flash-decoding): a batch of one still
//             fills the GPU. Rows with more queries (prefill chunks) are not
//             split: their chunks already give parallelism.
//   attend    a grid sized to fill the GPU takes items from an atomic
//             counter. Per item, 64-entry tiles of the split's range: each
//             pair of threads reads one entry (16-byte vector loads when the
//             row allows, the entry's key dotted with every query of the
//             chunk, its value staged as f32 in shared memory), then a warp
//             per query folds the tile into its running max and sum, then
//             each thread accumulates its (query, dim) outputs. A split item
//             writes its unnormalised partial (max, sum, acc) to the
//             workspace; an unsplit one writes the output.
//   combine   per (row, KV head) of a split row: the partials merged in split
//             order.
// A row's arithmetic (its splits, tiles, summation orders) depends only on
// its own table, indptrs and `group`, never on the batch around it, so a row
// run alone gives the bits it gives in a batch (tests/test_cuda.cpp checks).
//
// Numbers: f32 throughout, scores in log2 units (queries pre-scaled by
// scale * log2(e), exp2f), online softmax with -inf handled (a query that
// sees nothing outputs zeros). Against the double-precision reference the
// outputs (averages of O(1) values) agree within 1e-4 absolute. Rotary
// positions on read: each key is rotated by its ordinal in the row's visible
// sequence, the angle ordinal * inv_freq computed in double and reduced
// modulo 2*pi in double, then cos/sin in f32 of the reduced angle (error
// below 4e-7 against the reference's double cos/sin: far inside 1e-4).
#include <algorithm>
#include <string>

#include "core/errors.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace mstar::kernels {

namespace {

using namespace cuda_detail;

constexpr int kThreads = 128;     // 4 warps per attention block
constexpr int kTile = 64;         // entries per tile: one pair of threads per entry
constexpr int kSplitKeys = 256;   // a decode unit is split every 256 visible entries...
constexpr int kMaxSplits = 32;    // ...into at most 32 splits (longer splits past 8192 entries)
constexpr int kMaxHeadDim = 256;
constexpr float kLog2e = 1.4426950408889634f;
constexpr unsigned kFull = 0xffffffffu;

__device__ __forceinline__ int round_up(int x, int m) { return (x + m - 1) / m * m; }

// Query vectors per chunk, per split row: what the plan and the attention
// kernel agree on. Rows whose unit fits one chunk are split.
struct RowWork {
  int chunks;  // query chunks of the unit (0: no queries)
  int splits;  // splits of the visible sequence (1 unless the unit is one chunk)
};

__device__ RowWork row_work(const BoundedAttentionParams& p, int r, int qc_max) {
  const int q_len = p.q_indptr[r + 1] - p.q_indptr[r];
  const int group = p.num_q_heads / p.num_kv_heads;
  const int qn = q_len > 0 ? q_len * group : 0;
  RowWork w{(qn + qc_max - 1) / qc_max, 1};
  const BoundedRowTable& t = p.table[r];
  if (t.slot != kPaddingRow && w.chunks == 1) {
    int64_t total = static_cast<int64_t>(p.kv_indptr[r + 1]) - p.kv_indptr[r];
    for (int k = 0; k < 5; ++k) total += t.reads[k].len > 0 ? t.reads[k].len : 0;
    const int64_t s = (total + kSplitKeys - 1) / kSplitKeys;
    w.splits = static_cast<int>(s < 1 ? 1 : s > kMaxSplits ? kMaxSplits : s);
  }
  return w;
}

// The plan, in the workspace: a work counter, the item count, each row's
// first item (an exclusive prefix, rows + 1 entries) and each row's work.
struct Plan {
  int* counter;
  int* total;
  int* item_base;  // [rows + 1]
  RowWork* work;   // [rows]
};

// One block of 1024 threads: each row's item count, and the prefix over rows
// by a block-wide scan, a tile of 1024 rows at a time.
__global__ void __launch_bounds__(1024) plan_kernel(BoundedAttentionParams p, int qc_max, Plan plan) {
  __shared__ int warp_sum[32];
  __shared__ int carry;
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  if (t == 0) carry = 0;
  __syncthreads();
  for (int base = 0; base < p.rows; base += 1024) {
    const int r = base + t;
    int items = 0;
    if (r < p.rows) {
      const RowWork w = row_work(p, r, qc_max);
      plan.work[r] = w;
      items = p.num_kv_heads * w.chunks * w.splits;
    }
    int x = items;  // inclusive scan within the warp
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
      const int y = __shfl_up_sync(kFull, x, off);
      if (lane >= off) x += y;
    }
    if (lane == 31) warp_sum[warp] = x;
    __syncthreads();
    if (warp == 0) {  // scan of the 32 warp sums
      int s = warp_sum[lane];
#pragma unroll
      for (int off = 1; off < 32; off <<= 1) {
        const int y = __shfl_up_sync(kFull, s, off);
        if (lane >= off) s += y;
      }
      warp_sum[lane] = s;
    }
    __syncthreads();
    const int exclusive = carry + (warp > 0 ? warp_sum[warp - 1] : 0) + x - items;
    if (r < p.rows) plan.item_base[r] = exclusive;
    __syncthreads();  // everyone has read carry and warp_sum
    if (t == 1023) carry = exclusive + items;
    __syncthreads();
  }
  if (t == 0) {
    plan.item_base[p.rows] = carry;
    *plan.total = carry;
    *plan.counter = 0;
  }
}

// Split partials, in the workspace: slot (r * H + h) * kMaxSplits + split
// holds QC queries' max and sum (log2 units) and unnormalised outputs.
struct Partials {
  float* m;    // [slots][QC]
  float* l;    // [slots][QC]
  float* acc;  // [slots][QC][D]
};

// What one item reads, set up by thread 0 for the block.
struct Item {
  int r, h, cb, qc;          // row, KV head, first query vector of the chunk, queries in it
  int q0, q_len, kv0, span;  // the row's queries and step entries
  int n_stored;              // retained entries read (stream order), then the step's
  int o_begin, o_end;        // this item's range of the visible sequence
  int split;                 // the split index when the row is split, else -1
  int padding;               // a padding row: the chunk's outputs are zeros
  int read_cum[6];           // read k covers ordinals [read_cum[k], read_cum[k + 1])
  int read_start[5];
  int read_src[5];           // 1: the source block, 0: the slot block
  const unsigned char* slot;
  const unsigned char* source;
  int64_t slot_hs, source_hs;  // head strides (elements)
};

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(kFull, v, off));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(kFull, v, off);
  return v;
}

// cos and sin of pos * inv_freq: the angle in double, reduced modulo 2*pi in
// double (2*pi as two doubles), then cos/sin in f32 of the reduced angle by
// the hardware's approximations, whose error on [-pi, pi] is below 4e-7
// (CUDA C Programming Guide, intrinsic functions): the reduction is what
// needs double, not the cosine of a small angle.
__device__ __forceinline__ void rope_angle(int64_t pos, float inv_freq, float* c, float* s) {
  const double a = static_cast<double>(pos) * static_cast<double>(inv_freq);
  const double n = rint(a * 0.15915494309189535);  // a / (2 pi), to the nearest turn
  double r = fma(-n, 6.283185307179586, a);        // 2 pi, high part
  r = fma(-n, 2.4492935982947064e-16, r);          // 2 pi, low part
  __sincosf(static_cast<float>(r), s, c);
}

// Shared memory of one attention block (dynamic; sizes from D and QC).
struct Smem {
  float* q;      // [QC][qst]: the chunk's queries, pre-scaled; rotary: [lo half | hi half at hp]
  float* v;      // [kTile][vst]: the tile's values as f32
  float* s;      // [QC][kTile]: scores (log2 units)
  float* pr;     // [kTile][QC]: probabilities, each thread's queries contiguous
  float* freq;   // [kMaxHeadDim / 2]: rotary inverse frequencies
  float* m;      // [QC] running max (log2 units)
  float* l;      // [QC] running sum
  float* alpha;  // [QC] this tile's rescale of the accumulators
  int qst, vst, hp;
};

__host__ __device__ inline int q_stride(int D, bool rope) { return rope ? 2 * ((D / 2 + 7) / 8 * 8) : (D + 7) / 8 * 8; }
__host__ __device__ inline int v_stride(int D) { return (D + 7) / 8 * 8 + 4; }
__host__ inline std::size_t smem_bytes(int QC, int D, bool rope) {
  const std::size_t floats = static_cast<std::size_t>(QC) * q_stride(D, rope) + static_cast<std::size_t>(kTile) * v_stride(D) +
                             2 * static_cast<std::size_t>(QC) * kTile + kMaxHeadDim / 2 + 3 * static_cast<std::size_t>(QC);
  return floats * sizeof(float);
}

// Scores of one entry's key against the chunk's queries: this thread's share
// (u = 0 or 1 of the pair) of the dot products, accumulated into s[], and
// the same share of its value staged into vrow (f32). kp, vp: the key and
// value rows (dtype dt); pos: the entry's ordinal (rotary).
template <int QC>
__device__ __forceinline__ void entry_scores(const BoundedAttentionParams& p, const Smem& sm, int u,
                                             const unsigned char* kp, const unsigned char* vp, int dt, int64_t pos,
                                             float* vrow, float (&s)[QC]) {
  const int D = p.head_dim;
  const int es = dt == kF32 ? 4 : 2;
  const bool vec = aligned16(kp) && aligned16(vp) && (D * es) % 16 == 0;
  const int per = 16 / es;  // elements per 16-byte vector
  const int nvec = D * es / 16;

  if (vec && !p.rope_inv_freq) {
    // The common case: this thread's vectors of the key and the value, up to
    // 4 of each loaded before any is used (8 loads in flight per thread,
    // 16 KiB per block; more would spill registers).
    for (int v0 = u; v0 < nvec; v0 += 2 * 4) {
      uint4 rk[4], rv[4];
#pragma unroll
      for (int x = 0; x < 4; ++x)
        if (v0 + 2 * x < nvec) {
          rk[x] = ldg16(kp + (v0 + 2 * x) * 16);
          rv[x] = ldg16(vp + (v0 + 2 * x) * 16);
        }
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const int vi = v0 + 2 * x;
        if (vi >= nvec) continue;
        float f[8];
        unpack16(rv[x], dt, f);
        float* dst = vrow + vi * per;
        reinterpret_cast<float4*>(dst)[0] = make_float4(f[0], f[1], f[2], f[3]);
        if (per == 8) reinterpret_cast<float4*>(dst)[1] = make_float4(f[4], f[5], f[6], f[7]);
        unpack16(rk[x], dt, f);
        const float* qb = sm.q + vi * per;
        if (per == 8) {
#pragma unroll
          for (int q = 0; q < QC; ++q) {
            const float4 a = reinterpret_cast<const float4*>(qb + q * sm.qst)[0];
            const float4 b = reinterpret_cast<const float4*>(qb + q * sm.qst)[1];
            s[q] += a.x * f[0] + a.y * f[1] + a.z * f[2] + a.w * f[3] + b.x * f[4] + b.y * f[5] + b.z * f[6] + b.w * f[7];
          }
        } else {
#pragma unroll
          for (int q = 0; q < QC; ++q) {
            const float4 a = reinterpret_cast<const float4*>(qb + q * sm.qst)[0];
            s[q] += a.x * f[0] + a.y * f[1] + a.z * f[2] + a.w * f[3];
          }
        }
      }
    }
    return;
  }

  // The value, staged as f32.
  if (vec) {
    for (int vi = u; vi < nvec; vi += 2) {
      float f[8];
      unpack16(ldg16(vp + vi * 16), dt, f);
      float* dst = vrow + vi * per;
      reinterpret_cast<float4*>(dst)[0] = make_float4(f[0], f[1], f[2], f[3]);
      if (per == 8) reinterpret_cast<float4*>(dst)[1] = make_float4(f[4], f[5], f[6], f[7]);
    }
  } else {
    for (int d = u; d < D; d += 2) vrow[d] = load_as_f32(vp, dt, d);
  }
  if (p.rope_inv_freq) {
    // Pairs (i, i + D/2) rotated by the entry's ordinal, then dotted with
    // the query's halves (stored at [0, hp) and [hp, 2 hp)).
    const int half = D / 2;
    for (int i = u; i < half; i += 2) {
      const float x1 = load_as_f32(kp, dt, i), x2 = load_as_f32(kp, dt, i + half);
      float c, sn;
      rope_angle(pos, sm.freq[i], &c, &sn);
      const float r1 = x1 * c - x2 * sn, r2 = x1 * sn + x2 * c;
#pragma unroll
      for (int q = 0; q < QC; ++q) s[q] += sm.q[q * sm.qst + i] * r1 + sm.q[q * sm.qst + sm.hp + i] * r2;
    }
    return;
  }
  // Rows that allow no vector loads (odd sizes, unaligned strides).
  for (int d = u; d < D; d += 2) {
    const float kd = load_as_f32(kp, dt, d);
#pragma unroll
    for (int q = 0; q < QC; ++q) s[q] += sm.q[q * sm.qst + d] * kd;
  }
}

// One item, with the (query, dim) outputs spread as MQ queries x KD dims per
// thread: QG = QC / MQ groups of queries, each over DS = kThreads / QG dims
// (DS >= D for KD = 1; D <= 2 * DS for KD = 2).
template <int QC, int KD, int MQ>
__device__ void attend_item(const BoundedAttentionParams& p, const Smem& sm, const Item& it, Partials part) {
  constexpr int QG = QC / MQ;
  constexpr int DS = kThreads / QG;
  const int D = p.head_dim;
  const int group = p.num_q_heads / p.num_kv_heads;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const bool causal = p.mask == StepMask::causal;

  // The chunk's queries, pre-scaled into log2 units; zeros past the chunk.
  const bool rope = p.rope_inv_freq != nullptr;
  const int half = D / 2;
  for (int idx = tid; idx < QC * sm.qst; idx += kThreads) {
    const int q = idx / sm.qst, col = idx % sm.qst;
    int d = -1;
    if (!rope) d = col < D ? col : -1;
    else if (col < sm.hp) d = col < half ? col : -1;
    else d = col - sm.hp < half ? half + (col - sm.hp) : -1;
    float val = 0.0f;
    if (q < it.qc && d >= 0) {
      const int qv = it.cb + q, qt = qv / group, g = qv % group;
      val = p.q[(static_cast<int64_t>(it.q0) + qt) * p.q_token_stride + static_cast<int64_t>(it.h * group + g) * p.q_head_stride + d] *
            (p.scale * kLog2e);
    }
    sm.q[idx] = val;
  }
  if (tid < QC) {
    sm.m[tid] = -INFINITY;
    sm.l[tid] = 0.0f;
  }
  float acc[MQ][KD];
#pragma unroll
  for (int m = 0; m < MQ; ++m)
#pragma unroll
    for (int k = 0; k < KD; ++k) acc[m][k] = 0.0f;
  const int g_out = tid / DS, d_out = tid % DS;
  __syncthreads();

  const int es = p.kv_dtype == DType::f32 ? 4 : 2;
  const int stored_dt = static_cast<int>(p.kv_dtype);
  for (int tile0 = it.o_begin; tile0 < it.o_end; tile0 += kTile) {
    const int nk = min(kTile, it.o_end - tile0);
    // ---- scores and staged values: a pair of threads per entry ----
    const int j = tid >> 1, u = tid & 1;
    float s[QC];
#pragma unroll
    for (int q = 0; q < QC; ++q) s[q] = 0.0f;
    int js = -1;  // the entry's index among the step's own, or -1 for a stored one
    if (j < nk) {
      const int o = tile0 + j;
      const unsigned char* kp;
      const unsigned char* vp;
      int dt;
      if (o < it.n_stored) {
        int k = 0;
        while (k < 4 && o >= it.read_cum[k + 1]) ++k;
        const int64_t entry = it.read_start[k] + (o - it.read_cum[k]);
        const unsigned char* base = it.read_src[k] ? it.source : it.slot;
        const int64_t hs = it.read_src[k] ? it.source_hs : it.slot_hs;
        kp = base + (it.h * hs + entry * 2 * D) * es;
        vp = kp + static_cast<int64_t>(D) * es;
        dt = stored_dt;
      } else {
        js = o - it.n_stored;
        const int64_t at = (static_cast<int64_t>(it.kv0) + js) * p.kv_token_stride + static_cast<int64_t>(it.h) * p.kv_head_stride;
        kp = reinterpret_cast<const unsigned char*>(p.k + at);
        vp = reinterpret_cast<const unsigned char*>(p.v + at);
        dt = kF32;
      }
      entry_scores<QC>(p, sm, u, kp, vp, dt, o, sm.v + j * sm.vst, s);
    }
#pragma unroll
    for (int q = 0; q < QC; ++q) s[q] += __shfl_xor_sync(kFull, s[q], 1);
    // Masks: past the tile, past the chunk, and the step's entries a causal
    // query may not see (query token qt sees step entries j <= span - q_len + qt).
#pragma unroll
    for (int q = 0; q < QC; ++q) {
      if ((q & 1) != u) continue;  // each of the pair writes half
      float val = s[q];
      if (j >= nk || q >= it.qc) val = -INFINITY;
      else if (js >= 0 && causal && js > it.span - it.q_len + (it.cb + q) / group) val = -INFINITY;
      sm.s[q * kTile + j] = val;
    }
    __syncthreads();

    // ---- online softmax: a warp per query ----
    for (int q = warp; q < QC; q += kThreads / 32) {
      const float s0 = sm.s[q * kTile + lane], s1 = sm.s[q * kTile + lane + 32];
      const float m_old = sm.m[q];
      const float m_new = fmaxf(m_old, warp_max(fmaxf(s0, s1)));
      float p0 = 0.0f, p1 = 0.0f, alpha = 1.0f;
      if (m_new != -INFINITY) {  // exp2(-inf) = 0 covers masked scores and a first tile
        p0 = exp2f(s0 - m_new);
        p1 = exp2f(s1 - m_new);
        alpha = exp2f(m_old - m_new);
      }
      const float sum = warp_sum(p0 + p1);
      const int slot = (q % QG) * MQ + q / QG;  // thread group q % QG reads its queries contiguously
      sm.pr[lane * QC + slot] = p0;
      sm.pr[(lane + 32) * QC + slot] = p1;
      if (lane == 0) {
        sm.m[q] = m_new;
        sm.l[q] = sm.l[q] * alpha + sum;
        sm.alpha[q] = alpha;
      }
    }
    __syncthreads();

    // ---- outputs: acc = acc * alpha + sum_j p_j v_j ----
#pragma unroll
    for (int m = 0; m < MQ; ++m) {
      const float a = sm.alpha[g_out + QG * m];
#pragma unroll
      for (int k = 0; k < KD; ++k) acc[m][k] *= a;
    }
    int dcol[KD];
#pragma unroll
    for (int k = 0; k < KD; ++k) dcol[k] = min(d_out + DS * k, D - 1);  // clamped: columns past D are never written
    for (int jj = 0; jj < nk; ++jj) {
      float pj[MQ];
      const float* prow = sm.pr + jj * QC + g_out * MQ;
      if constexpr (MQ % 4 == 0) {
#pragma unroll
        for (int m = 0; m < MQ; m += 4) {
          const float4 x = *reinterpret_cast<const float4*>(prow + m);
          pj[m] = x.x, pj[m + 1] = x.y, pj[m + 2] = x.z, pj[m + 3] = x.w;
        }
      } else {
#pragma unroll
        for (int m = 0; m < MQ; ++m) pj[m] = prow[m];
      }
      const float* vr = sm.v + jj * sm.vst;
#pragma unroll
      for (int k = 0; k < KD; ++k) {
        const float vd = vr[dcol[k]];
#pragma unroll
        for (int m = 0; m < MQ; ++m) acc[m][k] = fmaf(pj[m], vd, acc[m][k]);
      }
    }
    __syncthreads();  // before the next tile overwrites scores, probabilities and values
  }

  // ---- results ----
#pragma unroll
  for (int m = 0; m < MQ; ++m) {
    const int q = g_out + QG * m;
    if (q >= it.qc) continue;
#pragma unroll
    for (int k = 0; k < KD; ++k) {
      const int d = d_out + DS * k;
      if (d >= D) continue;
      if (it.split >= 0) {
        const int64_t slot = (static_cast<int64_t>(it.r) * p.num_kv_heads + it.h) * kMaxSplits + it.split;
        part.acc[(slot * QC + q) * D + d] = acc[m][k];
      } else {
        const int qv = it.cb + q, qt = qv / group, g = qv % group;
        const float l = sm.l[q];
        p.out[(static_cast<int64_t>(it.q0) + qt) * p.out_token_stride + static_cast<int64_t>(it.h * group + g) * p.out_head_stride + d] =
            l > 0.0f ? acc[m][k] / l : 0.0f;
      }
    }
  }
  if (it.split >= 0 && tid < it.qc) {
    const int64_t slot = (static_cast<int64_t>(it.r) * p.num_kv_heads + it.h) * kMaxSplits + it.split;
    part.m[slot * QC + tid] = sm.m[tid];
    part.l[slot * QC + tid] = sm.l[tid];
  }
}

template <int QC>
__global__ void __launch_bounds__(kThreads, 4) attend_kernel(BoundedAttentionParams p, Plan plan, Partials part) {
  extern __shared__ float4 dyn_smem[];
  __shared__ Item it;
  __shared__ int item_id;
  const int D = p.head_dim;
  const bool rope = p.rope_inv_freq != nullptr;
  Smem sm;
  sm.qst = q_stride(D, rope);
  sm.vst = v_stride(D);
  sm.hp = rope ? sm.qst / 2 : 0;
  float* f = reinterpret_cast<float*>(dyn_smem);
  sm.q = f;
  f += QC * sm.qst;
  sm.v = f;
  f += kTile * sm.vst;
  sm.s = f;
  f += QC * kTile;
  sm.pr = f;
  f += QC * kTile;
  sm.freq = f;
  f += kMaxHeadDim / 2;
  sm.m = f;
  sm.l = f + QC;
  sm.alpha = f + 2 * QC;
  if (rope)
    for (int i = threadIdx.x; i < D / 2; i += kThreads) sm.freq[i] = p.rope_inv_freq[i];
  const int total = *plan.total;
  const int group = p.num_q_heads / p.num_kv_heads;

  for (;;) {
    if (threadIdx.x == 0) {
      item_id = atomicAdd(plan.counter, 1);
      if (item_id < total) {
        // The row: the last r with item_base[r] <= item (rows without items
        // share their base with the next row and are skipped).
        int lo = 0, hi = p.rows;
        while (hi - lo > 1) {
          const int mid = (lo + hi) / 2;
          if (plan.item_base[mid] <= item_id) lo = mid;
          else hi = mid;
        }
        const int r = lo;
        const RowWork w = plan.work[r];
        const int local = item_id - plan.item_base[r];
        const int split = local % w.splits, rest = local / w.splits;
        const BoundedRowTable& t = p.table[r];
        const BoundedRowAddress& a = p.address[r];
        it.r = r;
        it.h = rest / w.chunks;
        it.cb = (rest % w.chunks) * QC;
        it.q0 = p.q_indptr[r];
        it.q_len = p.q_indptr[r + 1] - it.q0;
        it.qc = min(QC, it.q_len * group - it.cb);
        it.kv0 = p.kv_indptr[r];
        it.span = p.kv_indptr[r + 1] - it.kv0;
        it.padding = t.slot == kPaddingRow;
        int cum = 0;
        for (int k = 0; k < 5; ++k) {
          it.read_cum[k] = cum;
          it.read_start[k] = t.reads[k].start;
          it.read_src[k] = t.reads[k].from_source;
          cum += t.reads[k].len > 0 ? t.reads[k].len : 0;
        }
        it.read_cum[5] = cum;
        it.n_stored = it.padding ? 0 : cum;
        it.slot = static_cast<const unsigned char*>(a.slot);
        it.source = static_cast<const unsigned char*>(a.source);
        it.slot_hs = a.slot_head_stride;
        it.source_hs = a.source_head_stride;
        const int n_total = it.n_stored + it.span;
        if (w.splits > 1) {
          const int per = round_up((n_total + w.splits - 1) / w.splits, kTile);
          it.o_begin = min(n_total, split * per);
          it.o_end = min(n_total, it.o_begin + per);
          it.split = split;
        } else {
          it.o_begin = 0;
          it.o_end = n_total;
          it.split = -1;
        }
        if (p.mask == StepMask::causal) {  // no query of the chunk sees past its last token's step entries
          const int qt_last = (it.cb + it.qc - 1) / group;
          const int step_seen = max(0, min(it.span, it.span - it.q_len + qt_last + 1));
          it.o_end = min(it.o_end, it.n_stored + step_seen);
          it.o_begin = min(it.o_begin, it.o_end);
        }
      }
    }
    __syncthreads();
    if (item_id >= total) break;
    if (it.padding) {  // zeros for the chunk's outputs
      for (int idx = threadIdx.x; idx < it.qc * D; idx += kThreads) {
        const int qv = it.cb + idx / D, qt = qv / group, g = qv % group;
        p.out[(static_cast<int64_t>(it.q0) + qt) * p.out_token_stride + static_cast<int64_t>(it.h * group + g) * p.out_head_stride +
              idx % D] = 0.0f;
      }
    } else if (D > 128) {
      attend_item<QC, 2, QC>(p, sm, it, part);
    } else if (D > 64) {
      attend_item<QC, 1, QC>(p, sm, it, part);
    } else if (D > 32) {
      attend_item<QC, 1, QC / 2>(p, sm, it, part);
    } else {
      attend_item<QC, 1, QC / 4>(p, sm, it, part);
    }
    __syncthreads();  // everyone is done with `it` and the shared buffers
  }
}

// Merges a split row's partials in split order: one block per (row, KV head).
template <int QC>
__global__ void __launch_bounds__(kThreads) combine_kernel(BoundedAttentionParams p, Plan plan, Partials part) {
  const int H = p.num_kv_heads, D = p.head_dim, group = p.num_q_heads / H;
  const int r = blockIdx.x / H, h = blockIdx.x % H;
  const RowWork w = plan.work[r];
  if (w.chunks != 1 || w.splits <= 1 || p.table[r].slot == kPaddingRow) return;
  const int q0 = p.q_indptr[r];
  const int qn = (p.q_indptr[r + 1] - q0) * group;  // <= QC: the unit is one chunk
  const int64_t slot0 = (static_cast<int64_t>(r) * H + h) * kMaxSplits;
  for (int idx = threadIdx.x; idx < qn * D; idx += kThreads) {
    const int q = idx / D, d = idx % D;
    float mx = -INFINITY;
    for (int sp = 0; sp < w.splits; ++sp) mx = fmaxf(mx, part.m[(slot0 + sp) * QC + q]);
    float out = 0.0f;
    if (mx != -INFINITY) {
      float l = 0.0f, o = 0.0f;
      for (int sp = 0; sp < w.splits; ++sp) {
        const int64_t s = (slot0 + sp) * QC + q;
        const float scale = exp2f(part.m[s] - mx);  // 0 for an empty split (m = -inf)
        l += part.l[s] * scale;
        o += part.acc[s * D + d] * scale;
      }
      out = l > 0.0f ? o / l : 0.0f;
    }
    const int qt = q / group, g = q % group;
    p.out[(static_cast<int64_t>(q0) + qt) * p.out_token_stride + static_cast<int64_t>(h * group + g) * p.out_head_stride + d] = out;
  }
}

template <int QC>
void launch_attention(const BoundedAttentionParams& p) {
  const bool rope = p.rope_inv_freq != nullptr;
  const std::size_t smem = smem_bytes(QC, p.head_dim, rope);
  // Dynamic plus static shared memory must fit the device's opt-in limit;
  // above 48 KiB a kernel must opt in to what it uses (set on every launch:
  // the size depends on the head dim).
  cudaFuncAttributes attr{};
  MSTAR_CUDA_CHECK(cudaFuncGetAttributes(&attr, attend_kernel<QC>));
  if (smem + attr.sharedSizeBytes > smem_optin())
    throw InputError("bounded_attention (cuda): head_dim " + std::to_string(p.head_dim) + " needs " +
                     std::to_string(smem + attr.sharedSizeBytes) + " bytes of shared memory per block; this device allows " +
                     std::to_string(smem_optin()));
  MSTAR_CUDA_CHECK(
      cudaFuncSetAttribute(attend_kernel<QC>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));

  if (static_cast<int64_t>(p.rows) * p.num_kv_heads > 0x7fffffff)
    throw InputError("bounded_attention (cuda): rows x num_kv_heads exceeds the grid");

  // Workspace: the plan, then the split partials (sized for every row split
  // to the most: the host does not know which rows will be).
  const int64_t rows = p.rows, H = p.num_kv_heads, D = p.head_dim;
  const std::size_t plan_bytes = align256(sizeof(int) * (2 + static_cast<std::size_t>(rows) + 1) + sizeof(RowWork) * rows + 64);
  const auto slots = static_cast<std::size_t>(rows * H * kMaxSplits);
  const std::size_t ml_bytes = align256(slots * QC * sizeof(float));
  const std::size_t acc_bytes = align256(slots * QC * static_cast<std::size_t>(D) * sizeof(float));
  auto* ws = static_cast<unsigned char*>(workspace(plan_bytes + 2 * ml_bytes + acc_bytes));
  Plan plan;
  plan.counter = reinterpret_cast<int*>(ws);
  plan.total = plan.counter + 1;
  plan.item_base = plan.counter + 2;
  // RowWork is two ints: 8-byte aligned after the 2 + rows + 1 ints rounded up to even.
  plan.work = reinterpret_cast<RowWork*>(plan.counter + 2 + ((rows + 1 + 1) / 2) * 2);
  Partials part;
  part.m = reinterpret_cast<float*>(ws + plan_bytes);
  part.l = reinterpret_cast<float*>(ws + plan_bytes + ml_bytes);
  part.acc = reinterpret_cast<float*>(ws + plan_bytes + 2 * ml_bytes);

  plan_kernel<<<1, 1024, 0, stream()>>>(p, QC, plan);
  MSTAR_CUDA_LAUNCHED("bounded plan_kernel");

  int per_sm = 0;
  MSTAR_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, attend_kernel<QC>, kThreads, smem));
  const int blocks = std::max(1, per_sm) * sm_count();
  attend_kernel<QC><<<blocks, kThreads, smem, stream()>>>(p, plan, part);
  MSTAR_CUDA_LAUNCHED("bounded attend_kernel");

  combine_kernel<QC><<<static_cast<unsigned>(rows * H), kThreads, 0, stream()>>>(p, plan, part);
  MSTAR_CUDA_LAUNCHED("bounded combine_kernel");
}

// ---- store and commit ----

// One block per (row, KV head): the row's kept entries, write ranges in
// order, back to back from scratch_start, rounded to the cache dtype.
__global__ void store_kernel(BoundedStoreParams p) {
  const int H = p.num_kv_heads, D = p.head_dim;
  const int r = blockIdx.x / H, h = blockIdx.x % H;
  const BoundedRowTable& t = p.table[r];
  if (t.slot == kPaddingRow) return;
  const BoundedRowAddress& a = p.address[r];
  const int dt = static_cast<int>(p.kv_dtype);
  const int64_t kv0 = p.kv_indptr[r];
  int64_t at = p.scratch_start;
  for (int wi = 0; wi < 3; ++wi) {
    const KVWrite w = t.writes[wi];
    if (w.len <= 0) continue;
    for (int64_t idx = threadIdx.x; idx < static_cast<int64_t>(w.len) * D; idx += blockDim.x) {
      const int64_t i = idx / D, d = idx % D;
      const int64_t j = w.fresh + i * w.fresh_step;
      const int64_t src = (kv0 + j) * p.kv_token_stride + static_cast<int64_t>(h) * p.kv_head_stride + d;
      const int64_t dst = static_cast<int64_t>(h) * a.slot_head_stride + (at + i) * 2 * D + d;
      store_from_f32(a.slot, dt, dst, p.k[src]);
      store_from_f32(a.slot, dt, dst + D, p.v[src]);
    }
    at += w.len;
  }
}

// One block per (row, KV head): each write range's entries copied from the
// scratch (the ranges never overlap it), in the widest words both ends allow.
__global__ void commit_kernel(BoundedCommitParams p) {
  const int H = p.num_kv_heads;
  const int r = blockIdx.x / H, h = blockIdx.x % H;
  const BoundedRowTable& t = p.table[r];
  if (t.slot == kPaddingRow) return;
  const BoundedRowAddress& a = p.address[r];
  const int64_t es = p.kv_dtype == DType::f32 ? 4 : 2;
  const int64_t entry = 2 * static_cast<int64_t>(p.head_dim) * es;  // bytes of one entry (key and value)
  unsigned char* head = static_cast<unsigned char*>(a.slot) + h * a.slot_head_stride * es;
  int64_t at = p.scratch_start;
  for (int wi = 0; wi < 3; ++wi) {
    const KVWrite w = t.writes[wi];
    if (w.len <= 0) continue;
    unsigned char* dst = head + static_cast<int64_t>(w.start) * entry;
    const unsigned char* src = head + at * entry;
    const int64_t bytes = w.len * entry;
    const auto ored = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) | static_cast<uintptr_t>(bytes);
    if ((ored & 15u) == 0) {
      for (int64_t i = threadIdx.x; i < bytes / 16; i += blockDim.x)
        reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
    } else if ((ored & 3u) == 0) {
      for (int64_t i = threadIdx.x; i < bytes / 4; i += blockDim.x)
        reinterpret_cast<uint32_t*>(dst)[i] = reinterpret_cast<const uint32_t*>(src)[i];
    } else {
      for (int64_t i = threadIdx.x; i < bytes / 2; i += blockDim.x)
        reinterpret_cast<uint16_t*>(dst)[i] = reinterpret_cast<const uint16_t*>(src)[i];
    }
    at += w.len;
  }
}

unsigned units_grid(int64_t units, const char* op) {
  if (units > 0x7fffffff) throw InputError(std::string(op) + " (cuda): rows x num_kv_heads exceeds the grid");
  return static_cast<unsigned>(units);
}

}  // namespace

void bounded_attention_cuda(const BoundedAttentionParams& p) {
  if (p.head_dim > kMaxHeadDim)
    throw InputError("bounded_attention (cuda): head_dim " + std::to_string(p.head_dim) + " above the supported " +
                     std::to_string(kMaxHeadDim));
  // Query vectors per chunk: the smallest of 4, 8, 16 holding a decode unit
  // (`group` queries), so no FMA is spent on empty query slots at decode;
  // prefill units span several chunks.
  const int group = p.num_q_heads / p.num_kv_heads;
  if (group <= 4) return launch_attention<4>(p);
  if (group <= 8) return launch_attention<8>(p);
  launch_attention<16>(p);
}

void bounded_store_cuda(const BoundedStoreParams& p) {
  store_kernel<<<units_grid(static_cast<int64_t>(p.rows) * p.num_kv_heads, "bounded_store"), 256, 0, stream()>>>(p);
  MSTAR_CUDA_LAUNCHED("bounded store_kernel");
}

void bounded_commit_cuda(const BoundedCommitParams& p) {
  commit_kernel<<<units_grid(static_cast<int64_t>(p.rows) * p.num_kv_heads, "bounded_commit"), 256, 0, stream()>>>(p);
  MSTAR_CUDA_LAUNCHED("bounded commit_kernel");
}

}  // namespace mstar::kernels

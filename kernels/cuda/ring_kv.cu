// The CUDA backend for the ring-KV ops, against RingUpsertParams and
// RingAttentionParams as ring_upsert_host and ring_attention_reference read
// them. Every pointer is device memory.
//
// Upsert: one thread per (row, head, plane, token, dim), dims innermost so
// reads and writes are coalesced; scratch frame always, ring slot too when
// the pass commits; rounding bit for bit as the host's (convert.h).
//
// Attention: each row's q_tokens queries times the query group of a KV head
// (qn = q_tokens * group query vectors, token-major as the cpu backend
// orders them) over the union of the row's visible ranges, bidirectional.
// At the real shape (Waypoint 720p: 512 tokens, 32/16 heads, D 64, about
// 17 * 512 visible slots) it is compute-bound, so it is tiled as a matrix
// product on f32 CUDA cores: a block holds BQ query vectors and walks the
// visible slots BK at a time; both tiles sit in shared memory as f32 (queries
// and keys transposed, so each thread reads its RS queries and CS keys of a
// dimension as one vector), each of 256 threads computes an RS x CS block of
// scores, the online softmax runs across the 16 threads that share a query
// row (shuffles inside half-warps), and each thread accumulates RS queries x
// DPT dims of the output. Three shapes (D up to 64, 128, 256) keep the
// shared memory under the 99 KiB an sm_86/89 block may have. Grid: (query
// tiles, KV heads, rows), all known on the host.
//
// Numbers: f32 products and sums, scores in log2 units (queries pre-scaled by
// scale * log2(e), exp2f). Against the double-precision reference the
// outputs (averages of O(1) values) agree within 1e-4 absolute at the sizes
// tested (thousands of visible slots).
#include <string>

#include "core/errors.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace mstar::kernels {

namespace {

using namespace cuda_detail;

constexpr float kLog2e = 1.4426950408889634f;
constexpr unsigned kFull = 0xffffffffu;
constexpr int kRingThreads = 256;  // a 16 x 16 grid: ty owns query rows, tx key columns and output dims

// ---- upsert ----

__global__ void upsert_kernel(RingUpsertParams p, int64_t n) {
  const int64_t D = p.head_dim, T = p.tokens, H = p.num_kv_heads;
  const int dt = static_cast<int>(p.kv_dtype);
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t d = idx % D;
    int64_t rest = idx / D;
    const int64_t t = rest % T;
    rest /= T;
    const int64_t plane = rest % 2;
    rest /= 2;
    const int64_t h = rest % H, b = rest / H;
    const float* src = plane == 0 ? p.k : p.v;
    const float x = src[(b * T + t) * p.token_stride + h * p.head_stride + d];
    const int64_t row = (plane * H + h) * p.total_slots;
    store_from_f32(p.kv, dt, (row + p.scratch_start[b] + t) * D + d, x);  // always the scratch frame
    const int64_t ring = p.ring_start ? p.ring_start[b] : -1;
    if (ring >= 0) store_from_f32(p.kv, dt, (row + ring + t) * D + d, x);
  }
}

// ---- attention ----

template <int N>
__device__ __forceinline__ void load_n(const float* p, float (&out)[N]) {
  if constexpr (N % 4 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 4) {
      const float4 v = *reinterpret_cast<const float4*>(p + i);
      out[i] = v.x, out[i + 1] = v.y, out[i + 2] = v.z, out[i + 3] = v.w;
    }
  } else if constexpr (N == 2) {
    const float2 v = *reinterpret_cast<const float2*>(p);
    out[0] = v.x, out[1] = v.y;
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = p[i];
  }
}

template <int BQ, int BK, int DM>
struct RingTile {
  static constexpr int RS = BQ / 16;      // query rows per thread
  static constexpr int CS = BK / 16;      // key columns per thread
  static constexpr int DPT = DM / 16;     // output dims per thread
  static constexpr int QST = BQ + 4;      // row strides (floats), 16-byte multiples
  static constexpr int KST = BK + 4;
  static constexpr int VST = DM + 4;
  static constexpr int PST = BQ + 4;
  static constexpr int kFloats = DM * QST + DM * KST + BK * VST + BK * PST;
  static constexpr std::size_t kBytes = kFloats * sizeof(float) + BK * sizeof(int64_t);
};

template <int BQ, int BK, int DM>
__global__ void __launch_bounds__(kRingThreads) ring_attend_kernel(RingAttentionParams p) {
  using Tl = RingTile<BQ, BK, DM>;
  constexpr int RS = Tl::RS, CS = Tl::CS, DPT = Tl::DPT;
  extern __shared__ float4 dyn_smem[];
  float* qsT = reinterpret_cast<float*>(dyn_smem);  // [DM][QST]: queries, transposed, pre-scaled
  float* ksT = qsT + DM * Tl::QST;                  // [DM][KST]: the tile's keys, transposed
  float* vs = ksT + DM * Tl::KST;                   // [BK][VST]: the tile's values
  float* psT = vs + BK * Tl::VST;                   // [BK][PST]: probabilities, transposed
  int64_t* slot_of = reinterpret_cast<int64_t*>(psT + BK * Tl::PST);  // [BK]: each tile column's slot
  __shared__ int cursor_range;
  __shared__ int64_t cursor_off;

  const int D = p.head_dim, H = p.num_kv_heads, group = p.num_q_heads / H;
  const int r = blockIdx.z, h = blockIdx.y;
  const int qn = p.q_tokens * group;
  const int q_first = blockIdx.x * BQ;
  const int tid = threadIdx.x, ty = tid / 16, tx = tid % 16;
  const int dt = static_cast<int>(p.kv_dtype);
  const int es = dt == kF32 ? 4 : 2;
  const int64_t plane = static_cast<int64_t>(H) * p.total_slots * D;  // elements: keys, then values
  const unsigned char* kbase = static_cast<const unsigned char*>(p.kv) + static_cast<int64_t>(h) * p.total_slots * D * es;
  const unsigned char* vbase = kbase + plane * es;

  // The block's queries, pre-scaled into log2 units; zeros past the unit.
  for (int idx = tid; idx < BQ * D; idx += kRingThreads) {
    const int a = idx / D, d = idx % D, qv = q_first + a;
    float val = 0.0f;
    if (qv < qn) {
      const int64_t tok = static_cast<int64_t>(r) * p.q_tokens + qv / group;
      val = p.q[tok * p.q_token_stride + static_cast<int64_t>(h * group + qv % group) * p.q_head_stride + d] *
            (p.scale * kLog2e);
    }
    qsT[d * Tl::QST + a] = val;
  }
  const int range_end = p.range_indptr[r + 1];
  int64_t n_keys = 0;
  for (int i = p.range_indptr[r]; i < range_end; ++i) n_keys += p.ranges[i].len > 0 ? p.ranges[i].len : 0;
  if (tid == 0) {
    cursor_range = p.range_indptr[r];
    cursor_off = 0;
  }

  float m[RS], l[RS], acc[RS][DPT];
#pragma unroll
  for (int a = 0; a < RS; ++a) {
    m[a] = -INFINITY;
    l[a] = 0.0f;
#pragma unroll
    for (int k = 0; k < DPT; ++k) acc[a][k] = 0.0f;
  }
  // Vector loads of a slot's key and value when every row is 16-byte aligned.
  const bool vec = aligned16(p.kv) && (static_cast<int64_t>(D) * es) % 16 == 0;
  const int per = 16 / es, nvec = D * es / 16;
  __syncthreads();

  for (int64_t tile0 = 0; tile0 < n_keys; tile0 += BK) {
    const int nk = static_cast<int>(n_keys - tile0 < BK ? n_keys - tile0 : BK);
    // Each column's slot: walk the ranges from the tile's first one.
    if (tid < BK) {
      int ri = cursor_range;
      int64_t o = cursor_off + tid;
      while (ri < range_end && o >= (p.ranges[ri].len > 0 ? p.ranges[ri].len : 0)) {
        o -= p.ranges[ri].len > 0 ? p.ranges[ri].len : 0;
        ++ri;
      }
      slot_of[tid] = ri < range_end ? p.ranges[ri].start + o : -1;
    }
    __syncthreads();
    if (tid == 0) {  // the next tile starts BK further (read above by everyone before this sync's end)
      int ri = cursor_range;
      int64_t o = cursor_off + BK;
      while (ri < range_end && o >= (p.ranges[ri].len > 0 ? p.ranges[ri].len : 0)) {
        o -= p.ranges[ri].len > 0 ? p.ranges[ri].len : 0;
        ++ri;
      }
      cursor_range = ri;
      cursor_off = o;
    }
    // Keys (transposed) and values as f32; zeros in columns past the tile.
    // Consecutive threads take consecutive columns, so the transposed key
    // stores of a warp fall in distinct banks.
    if (vec) {
      for (int idx = tid; idx < BK * nvec; idx += kRingThreads) {
        const int c = idx % BK, vi = idx / BK;
        float kf[8], vf[8];
        if (c < nk) {
          const int64_t off = slot_of[c] * D * es + static_cast<int64_t>(vi) * 16;
          unpack16(ldg16(kbase + off), dt, kf);
          unpack16(ldg16(vbase + off), dt, vf);
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) kf[e] = vf[e] = 0.0f;
        }
        float* vrow = vs + c * Tl::VST + vi * per;
        reinterpret_cast<float4*>(vrow)[0] = make_float4(vf[0], vf[1], vf[2], vf[3]);
        if (per == 8) reinterpret_cast<float4*>(vrow)[1] = make_float4(vf[4], vf[5], vf[6], vf[7]);
        for (int e = 0; e < per; ++e) ksT[(vi * per + e) * Tl::KST + c] = kf[e];
      }
    } else {
      for (int idx = tid; idx < BK * D; idx += kRingThreads) {
        const int c = idx % BK, d = idx / BK;
        float kv = 0.0f, vv = 0.0f;
        if (c < nk) {
          const int64_t e = slot_of[c] * D + d;
          kv = load_as_f32(kbase, dt, e);
          vv = load_as_f32(vbase, dt, e);
        }
        ksT[d * Tl::KST + c] = kv;
        vs[c * Tl::VST + d] = vv;
      }
    }
    __syncthreads();

    // Scores: rows ty*RS.., columns tx*CS...
    float sc[RS][CS];
#pragma unroll
    for (int a = 0; a < RS; ++a)
#pragma unroll
      for (int b = 0; b < CS; ++b) sc[a][b] = 0.0f;
    for (int d = 0; d < D; ++d) {
      float qa[RS], kb[CS];
      load_n<RS>(qsT + d * Tl::QST + ty * RS, qa);
      load_n<CS>(ksT + d * Tl::KST + tx * CS, kb);
#pragma unroll
      for (int a = 0; a < RS; ++a)
#pragma unroll
        for (int b = 0; b < CS; ++b) sc[a][b] = fmaf(qa[a], kb[b], sc[a][b]);
    }
    // Online softmax per query row, across the 16 threads sharing it (lanes
    // of one half-warp: xor offsets below 16 stay inside it).
#pragma unroll
    for (int a = 0; a < RS; ++a) {
      float mx = -INFINITY;
#pragma unroll
      for (int b = 0; b < CS; ++b) {
        if (tx * CS + b >= nk) sc[a][b] = -INFINITY;
        mx = fmaxf(mx, sc[a][b]);
      }
#pragma unroll
      for (int off = 8; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, off));
      const float m_new = fmaxf(m[a], mx);
      float alpha = 1.0f, sum = 0.0f;
      float pb[CS];
#pragma unroll
      for (int b = 0; b < CS; ++b) pb[b] = 0.0f;
      if (m_new != -INFINITY) {
        alpha = exp2f(m[a] - m_new);
#pragma unroll
        for (int b = 0; b < CS; ++b) sum += (pb[b] = exp2f(sc[a][b] - m_new));
      }
#pragma unroll
      for (int off = 8; off > 0; off >>= 1) sum += __shfl_xor_sync(kFull, sum, off);
      m[a] = m_new;
      l[a] = l[a] * alpha + sum;
#pragma unroll
      for (int k = 0; k < DPT; ++k) acc[a][k] *= alpha;
#pragma unroll
      for (int b = 0; b < CS; ++b) psT[(tx * CS + b) * Tl::PST + ty * RS + a] = pb[b];
    }
    __syncthreads();

    // Outputs: acc[rows ty*RS..][dims tx*DPT..] += p . v
    for (int c = 0; c < nk; ++c) {
      float pa[RS], vb[DPT];
      load_n<RS>(psT + c * Tl::PST + ty * RS, pa);
      load_n<DPT>(vs + c * Tl::VST + tx * DPT, vb);
#pragma unroll
      for (int a = 0; a < RS; ++a)
#pragma unroll
        for (int k = 0; k < DPT; ++k) acc[a][k] = fmaf(pa[a], vb[k], acc[a][k]);
    }
    __syncthreads();  // before the next tile overwrites keys, values, probabilities and slots
  }

#pragma unroll
  for (int a = 0; a < RS; ++a) {
    const int qv = q_first + ty * RS + a;
    if (qv >= qn) continue;
    const int64_t tok = static_cast<int64_t>(r) * p.q_tokens + qv / group;
    float* out = p.out + tok * p.out_token_stride + static_cast<int64_t>(h * group + qv % group) * p.out_head_stride;
#pragma unroll
    for (int k = 0; k < DPT; ++k) {
      const int d = tx * DPT + k;
      if (d < D) out[d] = l[a] > 0.0f ? acc[a][k] / l[a] : 0.0f;  // nothing visible: zeros
    }
  }
}

template <int BQ, int BK, int DM>
void launch_ring(const RingAttentionParams& p) {
  using Tl = RingTile<BQ, BK, DM>;
  static_assert(Tl::kBytes <= 99 * 1024, "the tile must fit an sm_86/89 block's shared memory");
  const std::size_t smem = Tl::kBytes;
  cudaFuncAttributes attr{};
  MSTAR_CUDA_CHECK(cudaFuncGetAttributes(&attr, ring_attend_kernel<BQ, BK, DM>));
  if (smem + attr.sharedSizeBytes > smem_optin())
    throw InputError("ring_attention (cuda): head_dim " + std::to_string(p.head_dim) + " needs " +
                     std::to_string(smem + attr.sharedSizeBytes) + " bytes of shared memory per block; this device allows " +
                     std::to_string(smem_optin()));
  MSTAR_CUDA_CHECK(cudaFuncSetAttribute(ring_attend_kernel<BQ, BK, DM>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(smem)));
  const int64_t qn = static_cast<int64_t>(p.q_tokens) * (p.num_q_heads / p.num_kv_heads);
  const int64_t tiles = (qn + BQ - 1) / BQ;
  if (tiles > 0x7fffffff || p.num_kv_heads > 65535 || p.rows > 65535)
    throw InputError("ring_attention (cuda): the grid (query tiles, KV heads, rows) exceeds CUDA's limits");
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(p.num_kv_heads), static_cast<unsigned>(p.rows));
  ring_attend_kernel<BQ, BK, DM><<<grid, kRingThreads, smem, stream()>>>(p);
  MSTAR_CUDA_LAUNCHED("ring_attend_kernel");
}

}  // namespace

void ring_upsert_cuda(const RingUpsertParams& p) {
  const int64_t n = static_cast<int64_t>(p.rows) * p.num_kv_heads * 2 * p.tokens * p.head_dim;
  if (n == 0) return;
  upsert_kernel<<<grid_for(n, 256), 256, 0, stream()>>>(p, n);
  MSTAR_CUDA_LAUNCHED("ring upsert_kernel");
}

void ring_attention_cuda(const RingAttentionParams& p) {
  // Tile shapes by head dim, each within 99 KiB of shared memory:
  //   D <= 64:  64 queries x 64 keys, 4x4 scores and 4x4 outputs a thread (70 KiB)
  //   D <= 128: 64 queries x 32 keys, 4x2 scores and 4x8 outputs a thread (79 KiB)
  //   D <= 256: 32 queries x 16 keys, 2x1 scores and 2x16 outputs a thread (77 KiB)
  if (p.head_dim <= 64) return launch_ring<64, 64, 64>(p);
  if (p.head_dim <= 128) return launch_ring<64, 32, 128>(p);
  if (p.head_dim <= 256) return launch_ring<32, 16, 256>(p);
  throw InputError("ring_attention (cuda): head_dim " + std::to_string(p.head_dim) + " above the supported 256");
}

}  // namespace mstar::kernels

// The CUDA backend for the decoder trunk's ops (ops.h). Each enqueues on the
// backend's stream, reads device memory only, and checks its launch.
//
// matmul, y[rows, out] = x[rows, in] . w[out, in]^T (+ bias) (+ y):
//   rows <= 16 (decode): a hand-written kernel that streams each weight
//     element once for all rows. A block of 8 warps owns 32 outputs (4 per
//     warp); the rows' activations for 256 inputs at a time sit in shared
//     memory as f32, and each lane takes 8 consecutive inputs with one
//     16-byte weight load per output (two for f32), accumulating all rows in
//     f32 registers; a warp reduction finishes each dot product. When the
//     outputs alone cannot fill the GPU (fewer than 2 blocks per SM), the
//     inputs are split (split-K) into contiguous ranges of whole 256-input
//     steps, each range's partial sums go to the workspace, and a second
//     kernel adds them in split order with bias and accumulation. The split
//     count depends only on the shape and the device, so results are
//     reproducible. Rows are a template (1, 2, 4, 8, 16) so no FMA is spent
//     on absent rows. Activations stay f32: error is f32 accumulation alone.
//     ggml's block types (core/ggml_blocks.h) are read an element at a
//     time in the host's operation order, 16 rows at a time at any rows.
//   rows > 16: cuBLAS, row-major mapped to column-major as y^T = w . x^T
//     (op(A) = w^T viewed column-major, lda = in; B = x^T, ldb = x_stride;
//     C = y^T, ldc = y_stride), beta = 1 to accumulate, bias added after.
//     f32 weights: cublasSgemm in the default math mode (no TF32). f16/bf16
//     weights: the activations converted to the weight's dtype in the
//     workspace (rounded as core/dtype.h rounds), then cublasGemmEx with f32
//     output and CUBLAS_COMPUTE_32F: the activations' rounding (at most 2^-8
//     relative for bf16, 2^-11 for f16: their unit roundoffs) is this path's
//     error.
// rmsnorm: a block per row, the sum of squares in f32 (a block reduction;
//   the host sums in double), the scale 1/sqrt(mean + eps) in double.
// The elementwise ops use the host's operation order with explicit
// round-to-nearest intrinsics (no fused multiply-add the host does not do),
// so lerp, add_rows, gather_rows and embed match the host bit for bit and
// silu_mul and rope within their library functions' last bits.
#include <algorithm>
#include <string>

#include "core/errors.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_ops.h"

namespace mstar::kernels {

namespace {

using namespace cuda_detail;

constexpr unsigned kFull = 0xffffffffu;

// ---- matmul: the skinny kernel (rows <= 16) ----

constexpr int kMvThreads = 256;          // 8 warps
constexpr int kMvOutPerWarp = 4;
constexpr int kMvOutPerBlock = 8 * kMvOutPerWarp;
constexpr int kMvStep = 256;             // inputs per step: 32 lanes x 8

// The 8 weights of row o at inputs [k, k + 8) as f32, zeros past `in`.
__device__ __forceinline__ void load_w8(const MatmulParams& p, int dt, int64_t o, int64_t k, bool vec, float (&w)[8]) {
  const int64_t at = o * p.in + k;
  if (dt > kBF16) {  // a block type: `in` is whole blocks, so all 8 are there
#pragma unroll
    for (int e = 0; e < 8; ++e) w[e] = block_element(p.w, dt, at + e);
    return;
  }
  if (vec && k + 8 <= p.in) {
    if (dt == kF32) {
      const float* src = static_cast<const float*>(p.w) + at;
      unpack16(ldg16(src), dt, w);
      float hi[8];
      unpack16(ldg16(src + 4), dt, hi);
#pragma unroll
      for (int e = 0; e < 4; ++e) w[4 + e] = hi[e];
    } else {
      unpack16(ldg16(static_cast<const uint16_t*>(p.w) + at), dt, w);
    }
    return;
  }
#pragma unroll
  for (int e = 0; e < 8; ++e) w[e] = k + e < p.in ? load_as_f32(p.w, dt, at + e) : 0.0f;
}

// Block (blockIdx.x: 32 outputs, blockIdx.y: a range of inputs). R: rows,
// rounded up to a power of two (rows past p.rows are zeros and not written).
template <int R>
__global__ void __launch_bounds__(kMvThreads) mv_kernel(MatmulParams p, int64_t k_chunk, float* partial) {
  __shared__ __align__(16) float xs[R][kMvStep];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int dt = static_cast<int>(p.w_dtype);
  const int64_t o0 = static_cast<int64_t>(blockIdx.x) * kMvOutPerBlock + warp * kMvOutPerWarp;
  const int64_t k_begin = static_cast<int64_t>(blockIdx.y) * k_chunk;
  const int64_t k_end = k_begin + k_chunk < p.in ? k_begin + k_chunk : p.in;
  // Each weight row 16-byte aligned at every multiple of 8 inputs.
  const bool vec = aligned16(p.w) && (p.in * (dt == kF32 ? 4 : 2)) % 16 == 0;

  float acc[kMvOutPerWarp][R];
#pragma unroll
  for (int j = 0; j < kMvOutPerWarp; ++j)
#pragma unroll
    for (int r = 0; r < R; ++r) acc[j][r] = 0.0f;

  for (int64_t k0 = k_begin; k0 < k_end; k0 += kMvStep) {
    const int n = static_cast<int>(k_end - k0 < kMvStep ? k_end - k0 : kMvStep);
    __syncthreads();  // the previous step's activations are no longer read
    for (int idx = tid; idx < R * kMvStep; idx += kMvThreads) {
      const int r = idx / kMvStep, e = idx % kMvStep;
      xs[r][e] = r < p.rows && e < n ? p.x[r * p.x_stride + k0 + e] : 0.0f;
    }
    __syncthreads();
    const int e0 = lane * 8;
    if (e0 >= n) continue;
    float w[kMvOutPerWarp][8];
#pragma unroll
    for (int j = 0; j < kMvOutPerWarp; ++j) {
      if (o0 + j < p.out) {
        load_w8(p, dt, o0 + j, k0 + e0, vec, w[j]);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) w[j][e] = 0.0f;
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const float4 xa = *reinterpret_cast<const float4*>(&xs[r][e0]);
      const float4 xb = *reinterpret_cast<const float4*>(&xs[r][e0 + 4]);
#pragma unroll
      for (int j = 0; j < kMvOutPerWarp; ++j)
        acc[j][r] += w[j][0] * xa.x + w[j][1] * xa.y + w[j][2] * xa.z + w[j][3] * xa.w + w[j][4] * xb.x +
                     w[j][5] * xb.y + w[j][6] * xb.z + w[j][7] * xb.w;
    }
  }
#pragma unroll
  for (int j = 0; j < kMvOutPerWarp; ++j)
#pragma unroll
    for (int r = 0; r < R; ++r) {
      float v = acc[j][r];
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(kFull, v, off);
      acc[j][r] = v;
    }
  if (lane != 0) return;
#pragma unroll
  for (int j = 0; j < kMvOutPerWarp; ++j) {
    const int64_t o = o0 + j;
    if (o >= p.out) continue;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (r >= p.rows) continue;
      if (partial) {
        partial[(static_cast<int64_t>(blockIdx.y) * p.rows + r) * p.out + o] = acc[j][r];
      } else {
        float& y = p.y[r * p.y_stride + o];
        float v = acc[j][r];
        if (p.accumulate) v = __fadd_rn(v, y);
        if (p.bias) v = __fadd_rn(v, p.bias[o]);
        y = v;
      }
    }
  }
}

// y[r][o] = sum over splits, in order (+ y) (+ bias).
__global__ void mv_reduce_kernel(MatmulParams p, const float* partial, int splits) {
  const int64_t n = p.rows * p.out;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / p.out, o = i % p.out;
    float v = 0.0f;
    for (int s = 0; s < splits; ++s) v = __fadd_rn(v, partial[(static_cast<int64_t>(s) * p.rows + r) * p.out + o]);
    float& y = p.y[r * p.y_stride + o];
    if (p.accumulate) v = __fadd_rn(v, y);
    if (p.bias) v = __fadd_rn(v, p.bias[o]);
    y = v;
  }
}

template <int R>
void launch_mv(const MatmulParams& p) {
  const int64_t out_blocks = (p.out + kMvOutPerBlock - 1) / kMvOutPerBlock;
  if (out_blocks > 0x7fffffff) throw InputError("matmul (cuda): out exceeds the grid");
  // Split the inputs when the outputs give fewer than 2 blocks per SM; each
  // split at least 2 steps (512 inputs), at most 32 splits.
  const int64_t steps = (p.in + kMvStep - 1) / kMvStep;
  int64_t splits = 1;
  const int64_t want = 2 * static_cast<int64_t>(sm_count());
  if (out_blocks < want) splits = std::min<int64_t>({(want + out_blocks - 1) / out_blocks, steps / 2, 32});
  if (splits < 1) splits = 1;
  const int64_t k_chunk = (steps + splits - 1) / splits * kMvStep;
  splits = (p.in + k_chunk - 1) / k_chunk;  // no empty split
  float* partial = nullptr;
  if (splits > 1) partial = static_cast<float*>(workspace(static_cast<std::size_t>(splits * p.rows * p.out) * sizeof(float)));
  const dim3 grid(static_cast<unsigned>(out_blocks), static_cast<unsigned>(splits));
  mv_kernel<R><<<grid, kMvThreads, 0, stream()>>>(p, k_chunk, partial);
  MSTAR_CUDA_LAUNCHED("matmul mv_kernel");
  if (partial) {
    mv_reduce_kernel<<<grid_for(p.rows * p.out, 256), 256, 0, stream()>>>(p, partial, static_cast<int>(splits));
    MSTAR_CUDA_LAUNCHED("matmul mv_reduce_kernel");
  }
}

// ---- matmul: cuBLAS (rows > 16) ----

// x (f32, row stride x_stride) to the weight's 16-bit dtype, contiguous.
__global__ void to_16bit_kernel(const float* __restrict__ x, int64_t x_stride, int64_t rows, int64_t in, int dt,
                                uint16_t* __restrict__ out) {
  const int64_t n = rows * in;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = x[(i / in) * x_stride + i % in];
    out[i] = dt == kF16 ? convert::f32_to_f16_bits(v) : convert::f32_to_bf16_bits(v);
  }
}

__global__ void add_bias_kernel(float* __restrict__ y, int64_t y_stride, int64_t rows, int64_t out,
                                const float* __restrict__ bias) {
  const int64_t n = rows * out;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float& v = y[(i / out) * y_stride + i % out];
    v = __fadd_rn(v, bias[i % out]);
  }
}

int as_int(int64_t v, const char* what) {
  if (v > 0x7fffffff) throw InputError(std::string("matmul (cuda): ") + what + " exceeds cuBLAS's int range");
  return static_cast<int>(v);
}

void matmul_cublas(const MatmulParams& p) {
  const int m = as_int(p.out, "out"), n = as_int(p.rows, "rows"), k = as_int(p.in, "in");
  const int ldc = as_int(p.y_stride, "y_stride");
  const float alpha = 1.0f, beta = p.accumulate ? 1.0f : 0.0f;
  if (p.w_dtype == DType::f32) {
    MSTAR_CUDA_CHECK(cublas_api().sgemm(cublas(), CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha,
                                        static_cast<const float*>(p.w), k, p.x, as_int(p.x_stride, "x_stride"),
                                        &beta, p.y, ldc));
  } else {
    auto* xh = static_cast<uint16_t*>(workspace(static_cast<std::size_t>(p.rows * p.in) * sizeof(uint16_t)));
    const int dt = static_cast<int>(p.w_dtype);
    to_16bit_kernel<<<grid_for(p.rows * p.in, 256), 256, 0, stream()>>>(p.x, p.x_stride, p.rows, p.in, dt, xh);
    MSTAR_CUDA_LAUNCHED("matmul to_16bit_kernel");
    const cudaDataType_t t = p.w_dtype == DType::f16 ? CUDA_R_16F : CUDA_R_16BF;
    MSTAR_CUDA_CHECK(cublas_api().gemm_ex(cublas(), CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, p.w, t, k, xh, t, k,
                                          &beta, p.y, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  if (p.bias) {
    add_bias_kernel<<<grid_for(p.rows * p.out, 256), 256, 0, stream()>>>(p.y, p.y_stride, p.rows, p.out, p.bias);
    MSTAR_CUDA_LAUNCHED("matmul add_bias_kernel");
  }
}

// ---- rmsnorm ----

__global__ void rmsnorm_kernel(RmsNormParams p) {
  __shared__ float warp_part[32];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, warps = blockDim.x / 32;
  for (int64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const float* x = p.x + r * p.width;
    float ss = 0.0f;
    for (int64_t i = tid; i < p.width; i += blockDim.x) ss += x[i] * x[i];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(kFull, ss, off);
    if (lane == 0) warp_part[warp] = ss;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < warps; ++w) total += warp_part[w];  // every thread, same order: the same total
    const float inv = static_cast<float>(1.0 / sqrt(static_cast<double>(total) / static_cast<double>(p.width) + p.eps));
    float* out = p.out + r * p.width;  // may be x: each element is read, then written, by the same thread
    for (int64_t i = tid; i < p.width; i += blockDim.x) out[i] = __fmul_rn(__fmul_rn(x[i], inv), p.w[i]);
    __syncthreads();  // warp_part is reused by the next row
  }
}

// ---- elementwise ----

__global__ void silu_mul_kernel(SiluMulParams p) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < p.n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float a = p.a[i];
    p.a[i] = __fmul_rn(__fdiv_rn(a, __fadd_rn(1.0f, expf(-a))), p.b[i]);
  }
}

// One thread per (token, head, pair of the head's first half); the sections
// applied in order, as the host applies them.
__global__ void rope_kernel(RopeParams p) {
  const int half = p.head_dim / 2;
  const int64_t n = p.tokens * p.heads * half;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int pair = static_cast<int>(i % half);
    const int64_t th = i / half, t = th / p.heads, h = th % p.heads;
    float* x = p.x + t * p.token_stride + h * p.head_stride;
    for (int s = 0; s < p.sections; ++s) {
      const RopeSection& sec = p.section[s];
      const int j = pair - sec.offset;
      if (j < 0 || j >= sec.count) continue;
      const double a = __dmul_rn(static_cast<double>(p.positions[t * p.sections + s]), static_cast<double>(sec.inv_freq[j]));
      double sn, c;
      sincos(a, &sn, &c);
      const double x1 = x[pair], x2 = x[pair + half];
      x[pair] = static_cast<float>(__dsub_rn(__dmul_rn(x1, c), __dmul_rn(x2, sn)));
      x[pair + half] = static_cast<float>(__dadd_rn(__dmul_rn(x1, sn), __dmul_rn(x2, c)));
    }
  }
}

__global__ void embed_kernel(EmbedParams p) {
  const int dt = static_cast<int>(p.dtype);
  const int64_t n = p.tokens * p.width;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / p.width, c = i % p.width;
    p.out[i] = weight_at(p.table, dt, static_cast<int64_t>(p.ids[t]) * p.width + c);
  }
}

__global__ void gather_rows_kernel(GatherRowsParams p) {
  const int64_t n = p.rows * p.width;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / p.width, c = i % p.width;
    p.out[i] = p.x[static_cast<int64_t>(p.index[r]) * p.width + c];
  }
}

__global__ void add_rows_kernel(AddRowsParams p) {
  const int64_t n = p.rows * p.width;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / p.width, c = i % p.width;
    p.x[i] = __fadd_rn(p.x[i], p.y[(r / p.group) * p.width + c]);
  }
}

__global__ void lerp_kernel(LerpParams p) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < p.n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    p.x[i] = __fadd_rn(p.x[i], __fmul_rn(__fsub_rn(p.y[i], p.x[i]), p.s));
}

}  // namespace

void matmul_cuda(const MatmulParams& p) {
  // Block types take the hand-written kernel, 16 rows at a time: cuBLAS reads no ggml block.
  if (p.w_dtype != DType::f32 && p.w_dtype != DType::f16 && p.w_dtype != DType::bf16 && p.rows > 16) {
    for (int64_t r = 0; r < p.rows; r += 16) {
      MatmulParams q = p;
      q.rows = p.rows - r < 16 ? p.rows - r : 16;
      q.x = p.x + r * p.x_stride;
      q.y = p.y + r * p.y_stride;
      matmul_cuda(q);
    }
    return;
  }
  if (p.rows > 16) return matmul_cublas(p);
  if (p.rows == 1) return launch_mv<1>(p);
  if (p.rows == 2) return launch_mv<2>(p);
  if (p.rows <= 4) return launch_mv<4>(p);
  if (p.rows <= 8) return launch_mv<8>(p);
  launch_mv<16>(p);
}

void rmsnorm_cuda(const RmsNormParams& p) {
  const int64_t blocks = p.rows < 65535 ? p.rows : 65535;
  rmsnorm_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream()>>>(p);
  MSTAR_CUDA_LAUNCHED("rmsnorm_kernel");
}

void silu_mul_cuda(const SiluMulParams& p) {
  silu_mul_kernel<<<grid_for(p.n, 256), 256, 0, stream()>>>(p);
  MSTAR_CUDA_LAUNCHED("silu_mul_kernel");
}

void rope_cuda(const RopeParams& p) {
  const int64_t n = p.tokens * p.heads * (p.head_dim / 2);
  if (n == 0) return;
  rope_kernel<<<grid_for(n, 256), 256, 0, stream()>>>(p);
  MSTAR_CUDA_LAUNCHED("rope_kernel");
}

void embed_cuda(const EmbedParams& p) {
  embed_kernel<<<grid_for(p.tokens * p.width, 256), 256, 0, stream()>>>(p);
  MSTAR_CUDA_LAUNCHED("embed_kernel");
}

void gather_rows_cuda(const GatherRowsParams& p) {
  gather_rows_kernel<<<grid_for(p.rows * p.width, 256), 256, 0, stream()>>>(p);
  MSTAR_CUDA_LAUNCHED("gather_rows_kernel");
}

void add_rows_cuda(const AddRowsParams& p) {
  add_rows_kernel<<<grid_for(p.rows * p.width, 256), 256, 0, stream()>>>(p);
  MSTAR_CUDA_LAUNCHED("add_rows_kernel");
}

void lerp_cuda(const LerpParams& p) {
  lerp_kernel<<<grid_for(p.n, 256), 256, 0, stream()>>>(p);
  MSTAR_CUDA_LAUNCHED("lerp_kernel");
}

}  // namespace mstar::kernels

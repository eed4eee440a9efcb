#pragma once
// Internal to the CUDA backend: the error check, the backend's stream, cuBLAS
// handle and workspace (device.cu), and the device-side loads and stores of
// the storage dtypes that every kernel file shares.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "kernels/cuda/convert.h"
#include "kernels/cuda/cublas_api.h"

namespace mstar::kernels::cuda_detail {

// Throws std::runtime_error("CUDA error: <call> at <file>:<line>: <what>").
// Every CUDA and cuBLAS call of the backend goes through one of the checks
// below: an error is an exception the caller can report, never an abort.
[[noreturn]] void fail(const char* call, const char* file, int line, const char* what);
void check(cudaError_t e, const char* call, const char* file, int line);
void check(cublasStatus_t s, const char* call, const char* file, int line);

// The backend's one stream (created on first use, never destroyed: it must
// outlive every static buffer freed at exit). Every kernel, copy and cuBLAS
// call of the backend is enqueued on it, so ops run in the order issued.
cudaStream_t stream();
// A cuBLAS handle bound to stream(), default math mode (no TF32).
cublasHandle_t cublas();
// At least `bytes` of device scratch, reused by every op (split-K partials,
// converted activations, attention plans). Grow-only: once warm, no call
// allocates. The pointer stays valid until the next call that must grow it;
// growing first waits for the stream, so no enqueued kernel still uses the
// old block. An op takes all its scratch from one call.
void* workspace(std::size_t bytes);
// The device's multiprocessor count and opt-in shared memory per block.
int sm_count();
std::size_t smem_optin();

// Rounds up to a multiple of 256 bytes (for carving the workspace).
constexpr std::size_t align256(std::size_t n) { return (n + 255) / 256 * 256; }

// Blocks for n elements at `threads` per block, each thread striding over
// the rest (grid-stride loops): capped so huge n do not make huge grids.
inline unsigned grid_for(int64_t n, int threads) {
  const int64_t cap = static_cast<int64_t>(sm_count()) * 32;
  int64_t b = (n + threads - 1) / threads;
  if (b > cap) b = cap;
  return static_cast<unsigned>(b < 1 ? 1 : b);
}

// ---- device-side storage dtypes: 0 f32, 1 f16, 2 bf16 (DType's values) ----

constexpr int kF32 = static_cast<int>(DType::f32);
constexpr int kF16 = static_cast<int>(DType::f16);
constexpr int kBF16 = static_cast<int>(DType::bf16);
static_assert(kF32 == 0 && kF16 == 1 && kBF16 == 2, "the kernels index dtypes by DType's values");

__device__ __forceinline__ float f16_bits_to_f32(uint16_t b) { return __half2float(__ushort_as_half(b)); }
__device__ __forceinline__ float bf16_bits_to_f32(uint16_t b) { return __uint_as_float(static_cast<uint32_t>(b) << 16); }

// Element i of a buffer of dtype dt, as f32 (exact: every f16 and bf16 is an f32).
__device__ __forceinline__ float load_as_f32(const void* base, int dt, int64_t i) {
  if (dt == kF32) return static_cast<const float*>(base)[i];
  const uint16_t b = static_cast<const uint16_t*>(base)[i];
  return dt == kF16 ? f16_bits_to_f32(b) : bf16_bits_to_f32(b);
}

// ---- ggml's block types (core/ggml_blocks.h), read an element at a time ----

constexpr int kQ8_0 = static_cast<int>(DType::q8_0), kQ4_0 = static_cast<int>(DType::q4_0);
constexpr int kQ4_K = static_cast<int>(DType::q4_k), kQ5_K = static_cast<int>(DType::q5_k);
constexpr int kQ6_K = static_cast<int>(DType::q6_k);

__device__ __forceinline__ float half_at(const unsigned char* p) {
  return f16_bits_to_f32(static_cast<uint16_t>(p[0] | (p[1] << 8)));
}

// Sub-block j's 6-bit scale and min of a Q4_K or Q5_K block (its 12 packed bytes).
__device__ __forceinline__ void scale_min_k4(int j, const unsigned char* q, float& sc, float& m) {
  if (j < 4) {
    sc = static_cast<float>(q[j] & 63);
    m = static_cast<float>(q[j + 4] & 63);
  } else {
    sc = static_cast<float>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    m = static_cast<float>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Element i of a buffer of block type dt, as f32, in the host's operation
// order (d * sc first, then the level, then the min), so it reads the
// host's value exactly.
__device__ __forceinline__ float block_element(const void* base, int dt, int64_t i) {
  const auto* w = static_cast<const unsigned char*>(base);
  if (dt == kQ8_0) {
    const unsigned char* b = w + (i / 32) * 34;
    return __fmul_rn(static_cast<float>(static_cast<signed char>(b[2 + i % 32])), half_at(b));
  }
  if (dt == kQ4_0) {
    const unsigned char* b = w + (i / 32) * 18;
    const int e = static_cast<int>(i % 32);
    const int q = e < 16 ? (b[2 + e] & 0xF) : (b[2 + e - 16] >> 4);
    return __fmul_rn(static_cast<float>(q - 8), half_at(b));
  }
  const int e = static_cast<int>(i % 256);
  if (dt == kQ6_K) {
    const unsigned char* b = w + (i / 256) * 210;
    const int h = e / 128, l = e % 32, qq = (e % 128) / 32;
    const unsigned char lo = b[h * 64 + l + (qq & 1) * 32];
    const int q = ((qq < 2 ? lo & 0xF : lo >> 4) | (((b[128 + h * 32 + l] >> (2 * qq)) & 3) << 4)) - 32;
    const float sc = static_cast<float>(static_cast<signed char>(b[192 + h * 8 + l / 16 + 2 * qq]));
    return __fmul_rn(__fmul_rn(half_at(b + 208), sc), static_cast<float>(q));
  }
  // Q4_K and Q5_K: sub-block s = e / 32, its nibble in byte 32 * (s / 2) + e % 32, low for even s.
  const bool five = dt == kQ5_K;
  const unsigned char* b = w + (i / 256) * (five ? 176 : 144);
  const int s = e / 32;
  float sc, m;
  scale_min_k4(s, b + 4, sc, m);
  const unsigned char byte = b[(five ? 48 : 16) + 32 * (s / 2) + e % 32];
  int q = s % 2 == 0 ? byte & 0xF : byte >> 4;
  if (five && ((b[16 + e % 32] >> s) & 1)) q += 16;
  return __fsub_rn(__fmul_rn(__fmul_rn(half_at(b), sc), static_cast<float>(q)), __fmul_rn(half_at(b + 2), m));
}

// Element i of a weight buffer of any type the backend takes, as f32.
__device__ __forceinline__ float weight_at(const void* base, int dt, int64_t i) {
  return dt <= kBF16 ? load_as_f32(base, dt, i) : block_element(base, dt, i);
}

// Element i of a buffer of dtype dt set to x, rounded exactly as the host's
// store_from_f32 rounds (convert.h).
__device__ __forceinline__ void store_from_f32(void* base, int dt, int64_t i, float x) {
  if (dt == kF32) {
    static_cast<float*>(base)[i] = x;
    return;
  }
  static_cast<uint16_t*>(base)[i] = dt == kF16 ? convert::f32_to_f16_bits(x) : convert::f32_to_bf16_bits(x);
}

// Elements a 16-byte vector of dtype dt holds: 4 (f32) or 8 (f16, bf16).
__device__ __forceinline__ int per16(int dt) { return dt == kF32 ? 4 : 8; }

// A 16-byte vector of dtype dt as f32 into out[0, per16(dt)); element 2k of a
// 2-byte dtype is the low half of word k (little-endian).
__device__ __forceinline__ void unpack16(const uint4& raw, int dt, float* out) {
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
  if (dt == kF32) {
#pragma unroll
    for (int k = 0; k < 4; ++k) out[k] = __uint_as_float(w[k]);
    return;
  }
  if (dt == kF16) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      out[2 * k] = f16_bits_to_f32(static_cast<uint16_t>(w[k] & 0xffffu));
      out[2 * k + 1] = f16_bits_to_f32(static_cast<uint16_t>(w[k] >> 16));
    }
    return;
  }
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    out[2 * k] = __uint_as_float(w[k] << 16);
    out[2 * k + 1] = __uint_as_float(w[k] & 0xffff0000u);
  }
}

// A read-only 16-byte load (the caller checks the alignment).
__device__ __forceinline__ uint4 ldg16(const void* p) { return __ldg(static_cast<const uint4*>(p)); }

__device__ __forceinline__ bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace mstar::kernels::cuda_detail

#define MSTAR_CUDA_CHECK(call) ::mstar::kernels::cuda_detail::check((call), #call, __FILE__, __LINE__)
// After a kernel launch: a bad configuration (too much shared memory, a grid
// too large) is reported here; faults inside the kernel surface at the next
// synchronisation, which checks too.
#define MSTAR_CUDA_LAUNCHED(kernel) \
  ::mstar::kernels::cuda_detail::check(cudaGetLastError(), "launch of " kernel, __FILE__, __LINE__)

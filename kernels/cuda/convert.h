#pragma once
// f32 -> f16 and f32 -> bf16 rounding in integer arithmetic, bit for bit what
// core/dtype.h's store_from_f32 does on the host (f32_to_f16 through GCC's
// _Float16, f32_to_bf16 by hand): round to nearest even, overflow to
// infinity, subnormals rounded, NaN kept a quiet NaN with the top of its
// payload. The CUDA backend stores KV and converts activations with these, so
// a cache written on the device holds the same bytes as one written on the
// host. Plain C++ (host and device): tests/test_cuda_convert.cpp checks it
// against core/dtype.h on any machine, GPU or not.
//
// The hardware conversion (cvt.rn.f16.f32) rounds the same way for numbers,
// but PTX leaves the NaN it returns unspecified; doing it in integers makes
// every input, NaN included, match.
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define MSTAR_HD __host__ __device__ __forceinline__
#else
#define MSTAR_HD inline
#endif

namespace mstar::kernels::convert {

MSTAR_HD uint32_t bits_of(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

// f32 -> bf16: the top half, rounded to nearest even; NaN stays a quiet NaN.
MSTAR_HD uint16_t f32_to_bf16_bits(float x) {
  uint32_t u = bits_of(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// f32 -> IEEE binary16, round to nearest even.
MSTAR_HD uint16_t f32_to_f16_bits(float x) {
  const uint32_t u = bits_of(x);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u)  // NaN: quiet, the top 10 bits of the payload kept
    return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  // 65520 (0x477ff000) is halfway between 65504, the largest half, and
  // 65536; ties go to the even neighbour, 65536, which overflows.
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (a >= 0x38800000u) {  // 2^-14 and up: a normal half
    const uint32_t mant = a & 0x7fffffu;
    uint32_t h = ((((a >> 23) - 127u + 15u) << 10) | (mant >> 13));
    const uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry moves into the exponent, as it should
    return static_cast<uint16_t>(sign | h);
  }
  // Below 2^-25 (and exactly 2^-25, a tie with 0) rounds to zero.
  if (a <= 0x33000000u) return static_cast<uint16_t>(sign);
  // A subnormal half: the value in units of 2^-24 is m * 2^(e - 126), with
  // m the 24-bit significand and e the biased exponent in [102, 112], so a
  // right shift by 126 - e in [14, 24], rounded to nearest even.
  const uint32_t m = (a & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - (a >> 23);
  uint32_t h = m >> shift;
  const uint32_t rest = m & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (h & 1u))) ++h;  // 0x3ff + 1 becomes the smallest normal, correctly
  return static_cast<uint16_t>(sign | h);
}

}  // namespace mstar::kernels::convert

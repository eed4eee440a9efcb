#pragma once
// Storage dtypes. mstar stores KV in f32, f16 or bf16 and does all arithmetic
// on the CPU in f32: the conversions below are the only place a narrow type
// is read or written.
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

// fmt 9's headers do not survive nvcc in C++20 mode (the host compiler
// rejects constexpr functions in nvcc's rewritten source), and the CUDA
// backend's .cu files, which include this header for DType, format nothing.
#if !defined(__CUDACC__)
#include <fmt/format.h>
#endif

namespace mstar {

enum class DType : uint8_t { f32, f16, bf16 };

constexpr std::size_t dtype_size(DType t) { return t == DType::f32 ? 4 : 2; }
std::string_view to_string(DType t);
// The one dtype parser. It takes every spelling mstar meets: its own (f32,
// f16, bf16), PyTorch's (float32, float16, bfloat16: Hugging Face's
// torch_dtype) and safetensors' (F32, F16, BF16). Throws ConfigError naming
// `what` and the text when it is none of them.
DType parse_dtype(std::string_view text, std::string_view what = "dtype");
// nullopt when the text is no spelling of a dtype (callers that report the
// problem themselves, with a place).
std::optional<DType> find_dtype(std::string_view text);
// The name safetensors headers use ("F32", "F16", "BF16").
std::string_view safetensors_name(DType t);

// IEEE binary16 via the compiler's _Float16 (GCC 12 on x86-64 lowers it to
// F16C instructions where the target has them, a libgcc routine otherwise).
// Clang 14, the fuzz preset's compiler, has no _Float16 on x86-64; its
// storage-only __fp16 converts the same way (IEEE, round to nearest even),
// through compiler-rt's routines.
#if defined(__clang__) && __clang_major__ < 15
using Half = __fp16;
#else
using Half = _Float16;
#endif
inline float f16_to_f32(uint16_t bits) {
  Half h;
  std::memcpy(&h, &bits, sizeof h);
  return static_cast<float>(h);
}
inline uint16_t f32_to_f16(float x) {
  Half h = static_cast<Half>(x);  // round to nearest even
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

// bfloat16 is the top half of an f32. GCC 12 has no arithmetic bf16 type, so
// rounding is done here: round to nearest even, NaN kept a (quiet) NaN.
inline float bf16_to_f32(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
inline uint16_t f32_to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// The first of n elements of dtype t whose exponent bits are all ones (an
// infinity or a NaN), by bits, so a scan of gigabytes stays a pass over
// memory; none: nullopt.
std::optional<std::size_t> first_non_finite(const void* data, DType t, std::size_t n);

// Reads element i of a buffer of dtype t as f32.
inline float load_as_f32(const void* base, DType t, std::size_t i) {
  switch (t) {
    case DType::f32: return static_cast<const float*>(base)[i];
    case DType::f16: return f16_to_f32(static_cast<const uint16_t*>(base)[i]);
    case DType::bf16: return bf16_to_f32(static_cast<const uint16_t*>(base)[i]);
  }
  return 0.0f;
}
inline void store_from_f32(void* base, DType t, std::size_t i, float x) {
  switch (t) {
    case DType::f32: static_cast<float*>(base)[i] = x; return;
    case DType::f16: static_cast<uint16_t*>(base)[i] = f32_to_f16(x); return;
    case DType::bf16: static_cast<uint16_t*>(base)[i] = f32_to_bf16(x); return;
  }
}
// What storing x in dtype t and reading it back gives.
inline float round_to(DType t, float x) {
  switch (t) {
    case DType::f32: return x;
    case DType::f16: return f16_to_f32(f32_to_f16(x));
    case DType::bf16: return bf16_to_f32(f32_to_bf16(x));
  }
  return x;
}

}  // namespace mstar

#if !defined(__CUDACC__)
template <>
struct fmt::formatter<mstar::DType> : fmt::formatter<std::string_view> {
  auto format(mstar::DType t, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(mstar::to_string(t), ctx);
  }
};
#endif

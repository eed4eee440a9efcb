#pragma once
// Storage dtypes. mstar stores KV in f32, f16 or bf16 and does all arithmetic
// on the CPU in f32: the conversions below are the only place a narrow type
// is read or written.
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// fmt 9's headers do not survive nvcc in C++20 mode (the host compiler
// rejects constexpr functions in nvcc's rewritten source), and the CUDA
// backend's .cu files, which include this header for DType, format nothing.
#if !defined(__CUDACC__)
#include <fmt/format.h>
#endif

namespace mstar {

// An element type, by its row in the traits table (dtype_traits). The ones
// below are built in: three floats, and ggml's block-quantised weight
// formats (core/ggml_blocks.h), which GGUF files hold. register_dtype adds a
// row and returns the DType naming it, so a new type is one row and its bodies.
enum class DType : uint8_t { f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k };

// One row of the table, as ggml's type traits: a type stores `block`
// elements together in `block_bytes` bytes (1 element and its size for the
// floats; 32 or 256 weights sharing a scale for a quantised type).
struct DTypeTraits {
  std::string_view name;         // mstar's spelling, also how messages name it ("bf16")
  std::string_view torch;        // PyTorch's (Hugging Face's torch_dtype), "" for none
  std::string_view safetensors;  // a safetensors header's, "" for none
  int64_t block = 1;             // elements stored together
  int64_t block_bytes = 0;       // bytes of one block
  // n elements (a multiple of block) to f32; every type has it.
  void (*to_f32)(const void* src, float* dst, int64_t n) = nullptr;
  // n f32 values (a multiple of block) into the type, rounded as the type
  // defines; null for a type nothing is converted into.
  void (*from_f32)(const float* src, void* dst, int64_t n) = nullptr;
  int gguf = -1;  // GGUF's number for it (ggml_type), -1 for none
};

// The row of t. t must name a row (a built-in type, or one register_dtype returned).
const DTypeTraits& dtype_traits(DType t);
// Adds a row and returns its DType. Throws ConfigError when a spelling is
// taken, block or block_bytes is not positive, to_f32 is missing, or the
// table is full. Call it before the type is used; rows are never removed.
DType register_dtype(const DTypeTraits& t);
// Every type in the table, built in first.
std::vector<DType> all_dtypes();
// Whether t is one of the enum's named types (a row a backend can have a
// body for), not one register_dtype added.
constexpr bool is_builtin(DType t) { return static_cast<uint8_t>(t) <= static_cast<uint8_t>(DType::q6_k); }

// Bytes of n elements of t; n a multiple of t's block (fits_blocks).
std::size_t row_bytes(DType t, int64_t n);
// Whether a row of n elements is whole blocks of t.
bool fits_blocks(DType t, int64_t n);
// Whether t stores each element on its own (block 1): what an op that reads
// or writes single elements (KV caches, activations) can take.
bool is_element_type(DType t);

std::string_view to_string(DType t);
// The one dtype parser. It takes every spelling in the table: mstar's (f32,
// f16, bf16), PyTorch's (float32, float16, bfloat16: Hugging Face's
// torch_dtype) and safetensors' (F32, F16, BF16). Throws ConfigError naming
// `what` and the text when it is none of them.
DType parse_dtype(std::string_view text, std::string_view what = "dtype");
// nullopt when the text is no spelling of a dtype (callers that report the
// problem themselves, with a place).
std::optional<DType> find_dtype(std::string_view text);
// The type a safetensors header's spelling names, nullopt for none.
std::optional<DType> find_safetensors_dtype(std::string_view text);
// The type GGUF's number (ggml_type) names, nullopt for none mstar reads.
std::optional<DType> find_gguf_dtype(uint32_t ggml_type);
// The name safetensors headers use ("F32", "F16", "BF16").
std::string_view safetensors_name(DType t);
// The safetensors spellings of every type that has one, for messages ("F32, F16 or BF16").
std::string safetensors_names();

// Converts n elements of src (dtype from) into dst (dtype to) through f32,
// a block at a time: n a multiple of both blocks, `to` a type with from_f32.
void convert(const void* src, DType from, void* dst, DType to, int64_t n);

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

// The first of n elements of dtype t (n a multiple of its block) that is an
// infinity or a NaN, none: nullopt. The built-in types are scanned by bits,
// so a scan of gigabytes stays a pass over memory; others are converted to
// f32 a run of blocks at a time.
std::optional<std::size_t> first_non_finite(const void* data, DType t, std::size_t n);

// Element i of a buffer of any dtype t as f32, through the row of its block
// (for messages: a value found wrong, say).
float element_as_f32(const void* data, DType t, std::size_t i);

// Reads element i of a buffer of built-in dtype t as f32 (single elements:
// the KV caches and the reference kernels' inner loops).
inline float load_as_f32(const void* base, DType t, std::size_t i) {
  switch (t) {
    case DType::f32: return static_cast<const float*>(base)[i];
    case DType::f16: return f16_to_f32(static_cast<const uint16_t*>(base)[i]);
    case DType::bf16: return bf16_to_f32(static_cast<const uint16_t*>(base)[i]);
    default: break;  // a block type has no single elements (is_element_type)
  }
  return 0.0f;
}
inline void store_from_f32(void* base, DType t, std::size_t i, float x) {
  switch (t) {
    case DType::f32: static_cast<float*>(base)[i] = x; return;
    case DType::f16: static_cast<uint16_t*>(base)[i] = f32_to_f16(x); return;
    case DType::bf16: static_cast<uint16_t*>(base)[i] = f32_to_bf16(x); return;
    default: return;  // a block type has no single elements (is_element_type)
  }
}
// What storing x in dtype t and reading it back gives.
inline float round_to(DType t, float x) {
  switch (t) {
    case DType::f32: return x;
    case DType::f16: return f16_to_f32(f32_to_f16(x));
    case DType::bf16: return bf16_to_f32(f32_to_bf16(x));
    default: break;  // a block type has no single elements (is_element_type)
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

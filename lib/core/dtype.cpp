#include "core/dtype.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <mutex>
#include <numeric>

#include "core/errors.h"
#include "core/ggml_blocks.h"

namespace mstar {

namespace {

void f32_to_f32(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
}
void f32_from_f32(const float* src, void* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
}
void f16_to_f32_n(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(h[i]);
}
void f16_from_f32_n(const float* src, void* dst, int64_t n) {
  auto* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = f32_to_f16(src[i]);
}
void bf16_to_f32_n(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(h[i]);
}
void bf16_from_f32_n(const float* src, void* dst, int64_t n) {
  auto* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = f32_to_bf16(src[i]);
}

// The table: the built-in rows in DType's order, then registered ones. A
// row is written before the count that publishes it, and never again.
constexpr int kMaxDTypes = 64;
struct Table {
  std::array<DTypeTraits, kMaxDTypes> rows{{
      {"f32", "float32", "F32", 1, 4, f32_to_f32, f32_from_f32, 0},
      {"f16", "float16", "F16", 1, 2, f16_to_f32_n, f16_from_f32_n, 1},
      {"bf16", "bfloat16", "BF16", 1, 2, bf16_to_f32_n, bf16_from_f32_n, 30},
      {"q8_0", "", "", kQ8_0Block, kQ8_0Bytes, q8_0_to_f32, q8_0_from_f32, 8},
      {"q4_0", "", "", kQ4_0Block, kQ4_0Bytes, q4_0_to_f32, q4_0_from_f32, 2},
      {"q4_k", "", "", kQKBlock, kQ4_KBytes, q4_k_to_f32, q4_k_from_f32, 12},
      {"q5_k", "", "", kQKBlock, kQ5_KBytes, q5_k_to_f32, q5_k_from_f32, 13},
      {"q6_k", "", "", kQKBlock, kQ6_KBytes, q6_k_to_f32, q6_k_from_f32, 14},
  }};
  std::atomic<int> count{8};
  std::mutex registering;
};
Table& table() {
  static Table t;
  return t;
}

bool spells(const DTypeTraits& t, std::string_view text) {
  return !text.empty() && (text == t.name || text == t.torch || text == t.safetensors);
}

}  // namespace

const DTypeTraits& dtype_traits(DType t) {
  const auto i = static_cast<int>(t);
  MSTAR_ASSERT(i < table().count.load(std::memory_order_acquire), "a DType names a row of the traits table");
  return table().rows[static_cast<std::size_t>(i)];
}

DType register_dtype(const DTypeTraits& t) {
  Table& tab = table();
  std::lock_guard lock(tab.registering);
  const int n = tab.count.load(std::memory_order_relaxed);
  if (t.name.empty() || t.block <= 0 || t.block_bytes <= 0 || !t.to_f32)
    throw ConfigError(fmt::format("dtype '{}': a type needs a name, a positive block ({}) and block_bytes ({}), and "
                                  "to_f32",
                                  t.name, t.block, t.block_bytes));
  for (int i = 0; i < n; ++i)
    for (std::string_view s : {t.name, t.torch, t.safetensors})
      if (spells(tab.rows[static_cast<std::size_t>(i)], s))
        throw ConfigError(fmt::format("dtype '{}': the spelling '{}' is taken by {}", t.name, s,
                                      tab.rows[static_cast<std::size_t>(i)].name));
  if (n == kMaxDTypes) throw ConfigError(fmt::format("dtype '{}': the table is full ({} types)", t.name, kMaxDTypes));
  tab.rows[static_cast<std::size_t>(n)] = t;
  tab.count.store(n + 1, std::memory_order_release);
  return static_cast<DType>(n);
}

std::vector<DType> all_dtypes() {
  std::vector<DType> out;
  for (int i = 0; i < table().count.load(std::memory_order_acquire); ++i) out.push_back(static_cast<DType>(i));
  return out;
}

bool fits_blocks(DType t, int64_t n) { return n >= 0 && n % dtype_traits(t).block == 0; }

std::size_t row_bytes(DType t, int64_t n) {
  const DTypeTraits& d = dtype_traits(t);
  MSTAR_ASSERT(n >= 0 && n % d.block == 0, "a row is whole blocks of its type (fits_blocks)");
  return static_cast<std::size_t>(n / d.block) * static_cast<std::size_t>(d.block_bytes);
}

bool is_element_type(DType t) { return dtype_traits(t).block == 1; }

std::string_view to_string(DType t) { return dtype_traits(t).name; }

std::string_view safetensors_name(DType t) { return dtype_traits(t).safetensors; }

std::optional<DType> find_dtype(std::string_view text) {
  for (DType t : all_dtypes())
    if (spells(dtype_traits(t), text)) return t;
  return std::nullopt;
}

std::optional<DType> find_safetensors_dtype(std::string_view text) {
  for (DType t : all_dtypes())
    if (!text.empty() && dtype_traits(t).safetensors == text) return t;
  return std::nullopt;
}

std::optional<DType> find_gguf_dtype(uint32_t ggml_type) {
  for (DType t : all_dtypes())
    if (dtype_traits(t).gguf >= 0 && static_cast<uint32_t>(dtype_traits(t).gguf) == ggml_type) return t;
  return std::nullopt;
}

std::string safetensors_names() {
  std::vector<std::string_view> names;
  for (DType t : all_dtypes())
    if (!dtype_traits(t).safetensors.empty()) names.push_back(dtype_traits(t).safetensors);
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += fmt::format("{}{}", i == 0 ? "" : i + 1 == names.size() ? " or " : ", ", names[i]);
  return out;
}

DType parse_dtype(std::string_view text, std::string_view what) {
  if (auto t = find_dtype(text)) return *t;
  std::string names;
  const std::vector<DType> all = all_dtypes();
  for (std::size_t i = 0; i < all.size(); ++i)
    names += fmt::format("{}{}", i == 0 ? "" : i + 1 == all.size() ? " or " : ", ", to_string(all[i]));
  throw ConfigError(fmt::format("{}: unknown dtype '{}' (expected {})", what, text, names));
}

float element_as_f32(const void* data, DType t, std::size_t i) {
  const DTypeTraits& d = dtype_traits(t);
  const auto block = static_cast<std::size_t>(d.block);
  std::vector<float> wide(block);
  d.to_f32(static_cast<const unsigned char*>(data) + row_bytes(t, static_cast<int64_t>(i / block * block)), wide.data(),
           d.block);
  return wide[i % block];
}

void convert(const void* src, DType from, void* dst, DType to, int64_t n) {
  const DTypeTraits &a = dtype_traits(from), &b = dtype_traits(to);
  MSTAR_ASSERT(b.from_f32, "convert: the target type can be written");
  MSTAR_ASSERT(n % a.block == 0 && n % b.block == 0, "convert: whole blocks of both types");
  // A run of whole blocks of both types at a time, through one f32 buffer.
  const int64_t unit = std::lcm(a.block, b.block), run = unit * std::max<int64_t>(1, 4096 / unit);
  std::vector<float> wide(static_cast<std::size_t>(std::min(run, std::max<int64_t>(n, 1))));
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  for (int64_t at = 0; at < n; at += run) {
    const int64_t len = std::min(run, n - at);
    a.to_f32(s + row_bytes(from, at), wide.data(), len);
    b.from_f32(wide.data(), d + row_bytes(to, at), len);
  }
}

namespace {

// Blocks of elements OR-reduced without an exit, which the compiler turns
// into vector code; only a block that holds a match is searched for it.
// One loop with an early exit is not vectorised: loading the
// Qwen2.5-0.5B-shaped bf16 checkpoint (942 MiB) took 1.25-1.28 s with it and
// 0.99-1.01 s with blocks (`mstar-bench checkpoint --threads 1`, load_s,
// alternated builds on one core).
template <typename U>
std::optional<std::size_t> first_all_ones(const U* u, std::size_t n, U mask) {
  constexpr std::size_t kBlock = 4096;
  for (std::size_t b = 0; b < n; b += kBlock) {
    const std::size_t e = n - b < kBlock ? n : b + kBlock;
    unsigned any = 0;
    for (std::size_t i = b; i < e; ++i) any |= static_cast<unsigned>((u[i] & mask) == mask);
    if (any == 0) continue;
    for (std::size_t i = b; i < e; ++i)
      if ((u[i] & mask) == mask) return i;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::size_t> first_non_finite(const void* data, DType dt, std::size_t n) {
  switch (dt) {
    case DType::f32: return first_all_ones(static_cast<const uint32_t*>(data), n, uint32_t{0x7f800000u});
    case DType::f16: return first_all_ones(static_cast<const uint16_t*>(data), n, uint16_t{0x7c00});
    case DType::bf16: return first_all_ones(static_cast<const uint16_t*>(data), n, uint16_t{0x7f80});
    default: break;
  }
  // A block type: its values as f32, a run of blocks at a time.
  const DTypeTraits& d = dtype_traits(dt);
  const auto block = static_cast<std::size_t>(d.block);
  MSTAR_ASSERT(n % block == 0, "first_non_finite: whole blocks");
  const std::size_t run = block * std::max<std::size_t>(1, 4096 / block);
  std::vector<float> wide(std::min(run, std::max<std::size_t>(n, 1)));
  for (std::size_t at = 0; at < n; at += run) {
    const std::size_t len = std::min(run, n - at);
    d.to_f32(static_cast<const unsigned char*>(data) + row_bytes(dt, static_cast<int64_t>(at)), wide.data(),
             static_cast<int64_t>(len));
    for (std::size_t i = 0; i < len; ++i)
      if (!std::isfinite(wide[i])) return at + i;
  }
  return std::nullopt;
}

}  // namespace mstar

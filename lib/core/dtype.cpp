#include "core/dtype.h"

#include "core/errors.h"

namespace mstar {

namespace {

struct Spelling {
  DType dtype;
  std::string_view mstar, torch, safetensors;
};
constexpr Spelling kSpellings[] = {
    {DType::f32, "f32", "float32", "F32"},
    {DType::f16, "f16", "float16", "F16"},
    {DType::bf16, "bf16", "bfloat16", "BF16"},
};

const Spelling& spelling(DType t) {
  for (const Spelling& s : kSpellings)
    if (s.dtype == t) return s;
  MSTAR_ASSERT(false, "a DType without spellings");
  return kSpellings[0];
}

}  // namespace

std::string_view to_string(DType t) { return spelling(t).mstar; }

std::string_view safetensors_name(DType t) { return spelling(t).safetensors; }

std::optional<DType> find_dtype(std::string_view text) {
  for (const Spelling& s : kSpellings)
    if (text == s.mstar || text == s.torch || text == s.safetensors) return s.dtype;
  return std::nullopt;
}

DType parse_dtype(std::string_view text, std::string_view what) {
  if (auto t = find_dtype(text)) return *t;
  throw ConfigError(fmt::format("{}: unknown dtype '{}' (expected f32, f16 or bf16)", what, text));
}

std::optional<std::size_t> first_non_finite(const void* data, DType dt, std::size_t n) {
  if (dt == DType::f32) {
    const auto* u = static_cast<const uint32_t*>(data);
    for (std::size_t i = 0; i < n; ++i)
      if ((u[i] & 0x7f800000u) == 0x7f800000u) return i;
    return std::nullopt;
  }
  const uint16_t mask = dt == DType::bf16 ? 0x7f80 : 0x7c00;
  const auto* h = static_cast<const uint16_t*>(data);
  for (std::size_t i = 0; i < n; ++i)
    if ((h[i] & mask) == mask) return i;
  return std::nullopt;
}

}  // namespace mstar

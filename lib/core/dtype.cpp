#include "core/dtype.h"

#include "core/errors.h"

namespace mstar {

std::string_view to_string(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
  }
  return "?";
}

DType parse_dtype(std::string_view text, std::string_view what) {
  if (text == "f32" || text == "float32") return DType::f32;
  if (text == "f16" || text == "float16") return DType::f16;
  if (text == "bf16" || text == "bfloat16") return DType::bf16;
  throw ConfigError(fmt::format("{}: unknown dtype '{}' (expected f32, f16 or bf16)", what, text));
}

}  // namespace mstar

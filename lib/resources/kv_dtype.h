#pragma once
// What a KV cache stores its entries in: the three float types its kernels
// read and write a single element at a time (no block type: a step writes
// one token's entries, not a block's).
#include <string_view>

#include <fmt/format.h>

#include "core/dtype.h"
#include "core/errors.h"

namespace mstar {

inline void check_kv_dtype(DType t, std::string_view where) {
  if (t != DType::f32 && t != DType::f16 && t != DType::bf16)
    throw ConfigError(fmt::format("{}: dtype {} cannot hold a KV cache (f32, f16 or bf16)", where, to_string(t)));
}

}  // namespace mstar

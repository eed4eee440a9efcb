#pragma once
// Writing GGUF files (version 3, little-endian), the container core/gguf.h
// reads: metadata in the order given, tensor infos, then each tensor's bytes
// at the alignment (docs/gguf.md, "The container").
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/gguf.h"

namespace mstar {

struct GgufTensorOut {
  std::string name;
  std::vector<int64_t> dims;  // as stored: dims[0] varies fastest (a row's length)
  DType dtype = DType::f32;   // a type with a GGUF number
  const void* data = nullptr;
  uint64_t bytes = 0;  // row_bytes(dtype, product of dims)
};

// Writes `metadata` (key, value; arrays of one scalar type) and `tensors`
// to `path`, general.alignment as given (32 when absent). Throws InputError
// when the file cannot be written (named, with the reason).
void write_gguf(const std::filesystem::path& path, const std::vector<std::pair<std::string, GgufValue>>& metadata,
                const std::vector<GgufTensorOut>& tensors);

// Metadata values, for writers.
GgufValue gguf_u32(uint32_t v);
GgufValue gguf_f32(float v);
GgufValue gguf_bool(bool v);
GgufValue gguf_string(std::string v);
GgufValue gguf_strings(std::vector<std::string> v);
GgufValue gguf_i32s(std::vector<int64_t> v);

}  // namespace mstar

#pragma once
// The header of a safetensors file: 8 bytes of little-endian header length,
// then a JSON object of name -> {dtype, shape, data_offsets}. Reading it
// checks the structure and that every tensor lies inside the file.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace mstar {

struct SafetensorsEntry {
  std::string dtype;  // as written: "F32", "F16", "BF16", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets in the data section
};

struct SafetensorsHeader {
  std::map<std::string, SafetensorsEntry> tensors;
  uint64_t data_offset = 0;  // where the data section starts in the file
  uint64_t file_size = 0;
};

struct TensorData {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  std::size_t bytes = 0;
};

// Writes a safetensors file (header, then the tensors' bytes in order).
// Throws InputError when the file cannot be written.
void write_safetensors(const std::filesystem::path& path, const std::vector<TensorData>& tensors);

// Throws InputError naming the file and what is wrong.
SafetensorsHeader read_safetensors_header(const std::filesystem::path& path);
// "F32" for f32, and so on.
std::string safetensors_dtype(DType t);

}  // namespace mstar

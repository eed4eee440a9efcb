#pragma once
// safetensors files: 8 bytes of little-endian header length, then a JSON
// object of name -> {dtype, shape, data_offsets}, then the data. A model may
// come in several such files, listed by a Hugging Face shard index
// (model.safetensors.index.json: {"weight_map": {tensor: file}}).
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

// Throws InputError naming the file and what is wrong: a header that is not
// the format, a tensor outside the data section, two tensors sharing a name
// or overlapping bytes.
SafetensorsHeader read_safetensors_header(const std::filesystem::path& path);

// The files a weights path names: the file itself, or, for a shard index
// (a file ending in ".index.json"), the shards it lists (relative to it),
// each once, in order. Throws InputError naming the index and the problem.
std::vector<std::filesystem::path> weight_files(const std::filesystem::path& path);

}  // namespace mstar

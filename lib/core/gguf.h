#pragma once
// GGUF files, the container llama.cpp's checkpoints come in (docs/gguf.md):
// "GGUF", a version, a tensor count and a metadata count, then metadata
// (key, type, value), then tensor infos (name, dimensions, ggml type,
// offset), then, at the file's alignment, the tensors' bytes. Little-endian;
// versions 2 and 3 read alike (3 only allows big-endian files, which are
// refused). Reading checks everything against the file before anything is
// kept: every count against the bytes left (and an array's against 2^22
// elements), every string as UTF-8, every tensor's type, size and offset
// inside the data and apart from the others.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"

namespace mstar {

// A metadata value's type, numbered as the file stores it.
enum class GgufType : uint32_t { u8, i8, u16, i16, u32, i32, f32, boolean, string, array, u64, i64, f64 };
std::string_view to_string(GgufType t);

// One metadata value: a scalar or an array of scalars (GGUF allows arrays
// of arrays, which no model mstar reads uses; they are refused).
struct GgufValue {
  GgufType type = GgufType::u8;
  GgufType element = GgufType::u8;  // an array's elements' type
  // Integers (and booleans as 0/1) in `integer`, floats in `real`, strings
  // in `text`; an array's elements in the vector of its kind.
  int64_t integer = 0;
  bool unsigned_above_int64 = false;  // a u64 over INT64_MAX, kept out of `integer`
  double real = 0;
  std::string text;
  std::vector<int64_t> integers;
  std::vector<double> reals;
  std::vector<std::string> texts;

  bool is_integer() const;  // any integer type, not bool
  bool is_real() const { return type == GgufType::f32 || type == GgufType::f64; }
  std::size_t count() const;     // elements of an array
  std::string describe() const;  // for messages: "u32 7", "string 'llama'", "array of 3 i32"
};

struct GgufTensor {
  std::string name;
  std::vector<int64_t> dims;  // as stored: dims[0] varies fastest (a row's length)
  uint32_t ggml_type = 0;
  DType dtype = DType::f32;  // the type ggml_type names
  uint64_t offset = 0;       // from the start of the file
  uint64_t bytes = 0;
};

struct GgufFile {
  std::filesystem::path path;
  uint32_t version = 0;
  uint64_t alignment = 32;
  std::map<std::string, GgufValue, std::less<>> metadata;
  std::vector<GgufTensor> tensors;  // in the file's order
  uint64_t data_offset = 0;         // where the tensors' bytes start
  uint64_t file_size = 0;

  const GgufValue* find(std::string_view key) const;
  const GgufTensor* tensor(std::string_view name) const;
};

// Whether `path` starts with GGUF's magic (a missing or short file: false).
bool is_gguf(const std::filesystem::path& path);

// Reads the header, metadata and tensor infos of a GGUF file (not the
// tensors). Throws InputError naming the file, the key or tensor, and the
// value: not a GGUF file, an unsupported version or byte order, a count or
// length beyond the file, a string or key that is not UTF-8, a key or tensor
// named twice, an alignment that is no power of two, a tensor with no
// dimensions or more than 4, an empty or overflowing shape, a type mstar has
// no row for, a row that is not whole blocks, an unaligned offset, bytes
// past the file's end or overlapping another tensor's.
GgufFile read_gguf(const std::filesystem::path& path);

}  // namespace mstar

#include "core/gguf_write.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/errors.h"
#include "core/files.h"

namespace mstar {

namespace {

// The file as bytes appended in order, flushed to `out` as they grow.
class Writer {
 public:
  explicit Writer(const std::filesystem::path& path) : out_(path) {}
  template <class T>
  void put(T v) {
    bytes(&v, sizeof v);
  }
  void bytes(const void* p, std::size_t n) {
    out_.write(std::string_view(static_cast<const char*>(p), n));
    at_ += n;
  }
  void string(const std::string& s) {
    put<uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
  void pad(uint64_t alignment) {
    static const char zeros[64] = {};
    for (uint64_t n = (alignment - at_ % alignment) % alignment; n > 0;) {
      const uint64_t k = std::min<uint64_t>(n, sizeof zeros);
      bytes(zeros, k);
      n -= k;
    }
  }
  void close() { out_.close(); }

 private:
  OutputFile out_;
  uint64_t at_ = 0;
};

void scalar(Writer& w, GgufType t, int64_t i, double r, const std::string& s) {
  switch (t) {
    case GgufType::u8:
      return w.put(static_cast<uint8_t>(i));
    case GgufType::i8:
      return w.put(static_cast<int8_t>(i));
    case GgufType::u16:
      return w.put(static_cast<uint16_t>(i));
    case GgufType::i16:
      return w.put(static_cast<int16_t>(i));
    case GgufType::u32:
      return w.put(static_cast<uint32_t>(i));
    case GgufType::i32:
      return w.put(static_cast<int32_t>(i));
    case GgufType::u64:
      return w.put(static_cast<uint64_t>(i));
    case GgufType::i64:
      return w.put(static_cast<int64_t>(i));
    case GgufType::boolean:
      return w.put(static_cast<uint8_t>(i != 0));
    case GgufType::f32:
      return w.put(static_cast<float>(r));
    case GgufType::f64:
      return w.put(r);
    case GgufType::string:
      return w.string(s);
    case GgufType::array:
      break;
  }
  MSTAR_ASSERT(false, "write_gguf: an array is written by value()");
}

void value(Writer& w, const GgufValue& v) {
  w.put(static_cast<uint32_t>(v.type));
  if (v.type != GgufType::array) return scalar(w, v.type, v.integer, v.real, v.text);
  MSTAR_ASSERT(v.element != GgufType::array, "write_gguf: no arrays of arrays");
  w.put(static_cast<uint32_t>(v.element));
  w.put(static_cast<uint64_t>(v.count()));
  for (const std::string& s : v.texts) scalar(w, v.element, 0, 0, s);
  for (double r : v.reals) scalar(w, v.element, 0, r, "");
  for (int64_t i : v.integers) scalar(w, v.element, i, 0, "");
}

}  // namespace

void write_gguf(const std::filesystem::path& path, const std::vector<std::pair<std::string, GgufValue>>& metadata,
                const std::vector<GgufTensorOut>& tensors) {
  uint64_t alignment = 32;
  for (const auto& [k, v] : metadata)
    if (k == "general.alignment") alignment = static_cast<uint64_t>(v.integer);
  MSTAR_ASSERT(alignment > 0 && (alignment & (alignment - 1)) == 0, "write_gguf: the alignment is a power of two");
  Writer w(path);
  w.bytes("GGUF", 4);
  w.put<uint32_t>(3);
  w.put<uint64_t>(tensors.size());
  w.put<uint64_t>(metadata.size());
  for (const auto& [k, v] : metadata) {
    w.string(k);
    value(w, v);
  }
  uint64_t offset = 0;  // from the data's start, each tensor aligned
  for (const GgufTensorOut& t : tensors) {
    MSTAR_ASSERT(dtype_traits(t.dtype).gguf >= 0, "write_gguf: a type GGUF numbers");
    w.string(t.name);
    w.put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) w.put<uint64_t>(static_cast<uint64_t>(d));
    w.put<uint32_t>(static_cast<uint32_t>(dtype_traits(t.dtype).gguf));
    w.put<uint64_t>(offset);
    offset += (t.bytes + alignment - 1) / alignment * alignment;
  }
  w.pad(alignment);
  for (const GgufTensorOut& t : tensors) {
    w.bytes(t.data, t.bytes);
    w.pad(alignment);
  }
  w.close();
}

GgufValue gguf_u32(uint32_t v) {
  GgufValue g;
  g.type = GgufType::u32;
  g.integer = v;
  return g;
}
GgufValue gguf_f32(float v) {
  GgufValue g;
  g.type = GgufType::f32;
  g.real = v;
  return g;
}
GgufValue gguf_bool(bool v) {
  GgufValue g;
  g.type = GgufType::boolean;
  g.integer = v;
  return g;
}
GgufValue gguf_string(std::string v) {
  GgufValue g;
  g.type = GgufType::string;
  g.text = std::move(v);
  return g;
}
GgufValue gguf_strings(std::vector<std::string> v) {
  GgufValue g;
  g.type = GgufType::array;
  g.element = GgufType::string;
  g.texts = std::move(v);
  return g;
}
GgufValue gguf_i32s(std::vector<int64_t> v) {
  GgufValue g;
  g.type = GgufType::array;
  g.element = GgufType::i32;
  g.integers = std::move(v);
  return g;
}

}  // namespace mstar

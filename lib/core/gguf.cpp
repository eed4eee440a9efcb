#include "core/gguf.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>

#include "core/errors.h"
#include "core/utf8.h"

namespace mstar {

namespace {

// Bounds no real file comes near, so a hostile count fails by name before
// anything is allocated for it (every count is also checked against the
// bytes left in the file).
constexpr uint64_t kMaxKeyBytes = 1 << 16;
constexpr uint64_t kMaxDims = 4;  // ggml's GGML_MAX_DIMS
constexpr uint64_t kMaxNameBytes = 1 << 10;
// A vocabulary's tokens or merges are the longest arrays models hold (a
// few hundred thousand); an element is kept in 8 bytes or more whatever
// its size in the file, so a hostile array of bytes could ask for 8 times
// the file's size.
constexpr uint64_t kMaxArray = 1 << 22;

// The file read front to back through a buffer, every read checked against
// its size; `where` names what is being read for messages.
class Cursor {
 public:
  explicit Cursor(const std::filesystem::path& path) : path_(path.string()) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw InputError(fmt::format("{}: cannot be opened: {}", path_, std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw InputError(fmt::format("{}: not a regular file", path_));
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~Cursor() { ::close(fd_); }
  Cursor(const Cursor&) = delete;
  Cursor& operator=(const Cursor&) = delete;

  uint64_t size() const { return size_; }
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(const std::string& what) const { throw InputError(fmt::format("{}: {}", path_, what)); }

  void read(void* dst, uint64_t n, std::string_view what) {
    if (n > left())
      fail(fmt::format("{}: {} bytes at byte {}, past the end of the file ({} bytes)", what, n, pos_, size_));
    auto* out = static_cast<unsigned char*>(dst);
    while (n > 0) {
      if (pos_ < buf_at_ || pos_ >= buf_at_ + buf_.size()) fill();
      const uint64_t off = pos_ - buf_at_, take = std::min<uint64_t>(n, buf_.size() - off);
      std::memcpy(out, buf_.data() + off, take);
      out += take;
      pos_ += take;
      n -= take;
    }
  }
  template <class T>
  T scalar(std::string_view what) {
    T v;
    read(&v, sizeof v, what);
    return v;
  }
  // A GGUF string: u64 length, then the bytes, which must be UTF-8.
  std::string string(std::string_view what, uint64_t max_bytes) {
    const auto n = scalar<uint64_t>(what);
    if (n > left())
      fail(fmt::format("{}: a string of {} bytes at byte {}, past the end of the file ({} bytes)", what, n, pos_,
                       size_));
    if (n > max_bytes) fail(fmt::format("{}: a string of {} bytes (at most {})", what, n, max_bytes));
    std::string s(static_cast<std::size_t>(n), '\0');
    read(s.data(), n, what);
    if (const std::size_t bad = find_invalid_utf8(s); bad != kValidUtf8)
      fail(fmt::format("{}: not UTF-8 (byte {} of the string)", what, bad));
    return s;
  }
  void seek(uint64_t at) { pos_ = at; }

 private:
  void fill() {
    const uint64_t want = std::min<uint64_t>(kBuffer, left());
    buf_.resize(static_cast<std::size_t>(want));
    for (uint64_t done = 0; done < want;) {
      const ssize_t n = ::pread(fd_, buf_.data() + done, want - done, static_cast<off_t>(pos_ + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail(fmt::format("{} at byte {}", n < 0 ? std::strerror(errno) : "ends early", pos_ + done));
      done += static_cast<uint64_t>(n);
    }
    buf_at_ = pos_;
  }

  static constexpr uint64_t kBuffer = 1 << 20;
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0, pos_ = 0, buf_at_ = 0;
  std::vector<unsigned char> buf_;
};

// Bytes a scalar of type t takes in the file; 0 for string and array.
uint64_t scalar_bytes(GgufType t) {
  switch (t) {
    case GgufType::u8:
    case GgufType::i8:
    case GgufType::boolean:
      return 1;
    case GgufType::u16:
    case GgufType::i16:
      return 2;
    case GgufType::u32:
    case GgufType::i32:
    case GgufType::f32:
      return 4;
    case GgufType::u64:
    case GgufType::i64:
    case GgufType::f64:
      return 8;
    case GgufType::string:
    case GgufType::array:
      return 0;
  }
  return 0;
}

GgufType value_type(Cursor& c, const std::string& what) {
  const auto t = c.scalar<uint32_t>(what);
  if (t > static_cast<uint32_t>(GgufType::f64))
    c.fail(fmt::format("{}: unknown value type {} (GGUF's are 0 to 12)", what, t));
  return static_cast<GgufType>(t);
}

// One scalar of type t into v's integer, real or text (for an array
// element, the caller moves it into the array).
void read_scalar(Cursor& c, GgufType t, const std::string& what, GgufValue& v) {
  switch (t) {
    case GgufType::u8:
      v.integer = c.scalar<uint8_t>(what);
      return;
    case GgufType::i8:
      v.integer = c.scalar<int8_t>(what);
      return;
    case GgufType::u16:
      v.integer = c.scalar<uint16_t>(what);
      return;
    case GgufType::i16:
      v.integer = c.scalar<int16_t>(what);
      return;
    case GgufType::u32:
      v.integer = c.scalar<uint32_t>(what);
      return;
    case GgufType::i32:
      v.integer = c.scalar<int32_t>(what);
      return;
    case GgufType::i64:
      v.integer = c.scalar<int64_t>(what);
      return;
    case GgufType::u64: {
      const auto u = c.scalar<uint64_t>(what);
      v.unsigned_above_int64 = u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
      v.integer = v.unsigned_above_int64 ? 0 : static_cast<int64_t>(u);
      return;
    }
    case GgufType::boolean: {
      const auto b = c.scalar<uint8_t>(what);
      if (b > 1) c.fail(fmt::format("{}: a bool holds {} (0 or 1)", what, b));
      v.integer = b;
      return;
    }
    case GgufType::f32:
      v.real = c.scalar<float>(what);
      return;
    case GgufType::f64:
      v.real = c.scalar<double>(what);
      return;
    case GgufType::string:
      v.text = c.string(what, c.left());
      return;
    case GgufType::array:
      break;
  }
  MSTAR_ASSERT(false, "read_scalar: arrays are read by read_value");
}

GgufValue read_value(Cursor& c, GgufType t, const std::string& what) {
  GgufValue v;
  v.type = t;
  if (t != GgufType::array) {
    read_scalar(c, t, what, v);
    return v;
  }
  v.element = value_type(c, what + " (array type)");
  if (v.element == GgufType::array) c.fail(fmt::format("{}: an array of arrays (no model mstar reads has one)", what));
  const auto n = c.scalar<uint64_t>(what + " (array length)");
  // A string takes at least its 8-byte length.
  const uint64_t least = v.element == GgufType::string ? 8 : scalar_bytes(v.element);
  if (n > kMaxArray)
    c.fail(fmt::format("{}: an array of {} {} (at most {})", what, n, to_string(v.element), kMaxArray));
  if (n > c.left() / least)
    c.fail(fmt::format("{}: an array of {} {}, more than the {} bytes left in the file could hold", what, n,
                       to_string(v.element), c.left()));
  const auto count = static_cast<std::size_t>(n);
  GgufValue e;
  if (v.element == GgufType::string) {
    v.texts.reserve(count);
    for (std::size_t i = 0; i < count; ++i) v.texts.push_back(c.string(fmt::format("{}[{}]", what, i), c.left()));
  } else if (v.element == GgufType::f32 || v.element == GgufType::f64) {
    v.reals.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      read_scalar(c, v.element, what, e);
      v.reals.push_back(e.real);
    }
  } else {
    v.integers.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      read_scalar(c, v.element, what, e);
      if (e.unsigned_above_int64)
        c.fail(fmt::format("{}[{}]: a u64 above {} (no model mstar reads has one)", what, i,
                           std::numeric_limits<int64_t>::max()));
      v.integers.push_back(e.integer);
    }
  }
  return v;
}

bool power_of_two(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

std::string ggml_type_names() {
  std::vector<std::string> names;
  for (DType t : all_dtypes())
    if (dtype_traits(t).gguf >= 0) names.push_back(fmt::format("{} ({})", to_string(t), dtype_traits(t).gguf));
  return fmt::format("{}", fmt::join(names, ", "));
}

GgufTensor read_tensor_info(Cursor& c, uint64_t index) {
  GgufTensor t;
  const std::string at = fmt::format("tensor info {}", index);
  t.name = c.string(at + " name", kMaxNameBytes);
  if (t.name.empty()) c.fail(fmt::format("{} has an empty name", at));
  const std::string what = fmt::format("tensor '{}'", t.name);
  const auto n_dims = c.scalar<uint32_t>(what + " dimension count");
  if (n_dims == 0 || n_dims > kMaxDims) c.fail(fmt::format("{}: {} dimensions (1 to {})", what, n_dims, kMaxDims));
  uint64_t elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    const auto n = c.scalar<uint64_t>(what + " dimension");
    if (n == 0 || n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / n)
      c.fail(fmt::format("{}: dimension {} is {} (its elements must be 1 to {} in all)", what, d, n,
                         std::numeric_limits<int64_t>::max()));
    elements *= n;
    t.dims.push_back(static_cast<int64_t>(n));
  }
  t.ggml_type = c.scalar<uint32_t>(what + " type");
  const std::optional<DType> dt = find_gguf_dtype(t.ggml_type);
  if (!dt)
    c.fail(
        fmt::format("{}: ggml type {}, which mstar does not read (it reads {})", what, t.ggml_type, ggml_type_names()));
  t.dtype = *dt;
  if (!fits_blocks(t.dtype, t.dims[0]))
    c.fail(fmt::format("{}: rows of {} elements are not whole {} blocks of {}", what, t.dims[0], to_string(t.dtype),
                       dtype_traits(t.dtype).block));
  // elements / block blocks of block_bytes each, checked for overflow.
  const auto blocks = elements / static_cast<uint64_t>(dtype_traits(t.dtype).block);
  const auto block_bytes = static_cast<uint64_t>(dtype_traits(t.dtype).block_bytes);
  if (blocks > std::numeric_limits<uint64_t>::max() / block_bytes)
    c.fail(fmt::format("{}: [{}] of {} overflows a byte count", what, fmt::join(t.dims, ", "), to_string(t.dtype)));
  t.bytes = blocks * block_bytes;
  t.offset = c.scalar<uint64_t>(what + " offset");
  return t;
}

}  // namespace

std::string_view to_string(GgufType t) {
  static constexpr std::string_view names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                               "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<std::size_t>(t);
  return i < std::size(names) ? names[i] : "unknown";
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufType::u8:
    case GgufType::i8:
    case GgufType::u16:
    case GgufType::i16:
    case GgufType::u32:
    case GgufType::i32:
    case GgufType::u64:
    case GgufType::i64:
      return true;
    default:
      return false;
  }
}

std::size_t GgufValue::count() const { return integers.size() + reals.size() + texts.size(); }

std::string GgufValue::describe() const {
  if (type == GgufType::array) return fmt::format("an array of {} {}", count(), to_string(element));
  if (type == GgufType::string) return fmt::format("string '{}'", text.size() > 64 ? text.substr(0, 64) + "..." : text);
  if (is_real()) return fmt::format("{} {}", to_string(type), real);
  if (type == GgufType::boolean) return integer ? "bool true" : "bool false";
  if (unsigned_above_int64) return "u64 above 2^63";
  return fmt::format("{} {}", to_string(type), integer);
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = metadata.find(key);
  return it == metadata.end() ? nullptr : &it->second;
}

const GgufTensor* GgufFile::tensor(std::string_view name) const {
  for (const GgufTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

bool is_gguf(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char magic[4] = {};
  const bool yes = ::pread(fd, magic, 4, 0) == 4 && std::memcmp(magic, "GGUF", 4) == 0;
  ::close(fd);
  return yes;
}

GgufFile read_gguf(const std::filesystem::path& path) {
  Cursor c(path);
  GgufFile f;
  f.path = path;
  f.file_size = c.size();
  char magic[4];
  if (c.size() < 4) c.fail(fmt::format("not a GGUF file ({} bytes; one starts with \"GGUF\")", c.size()));
  c.read(magic, 4, "magic");
  if (std::memcmp(magic, "GGUF", 4) != 0) c.fail("not a GGUF file (it does not start with \"GGUF\")");
  f.version = c.scalar<uint32_t>("version");
  if (f.version != 2 && f.version != 3) {
    const uint32_t swapped = __builtin_bswap32(f.version);
    if (swapped == 2 || swapped == 3)
      c.fail(fmt::format("a big-endian GGUF file (version {}); mstar reads little-endian ones", swapped));
    c.fail(fmt::format("GGUF version {} (mstar reads versions 2 and 3)", f.version));
  }
  const auto tensor_count = c.scalar<uint64_t>("tensor count");
  const auto kv_count = c.scalar<uint64_t>("metadata count");
  // A key-value pair takes at least 8 + 4 + 1 bytes, a tensor info 8 + 4 + 8 + 4 + 8.
  if (kv_count > c.left() / 13)
    c.fail(fmt::format("metadata count {} is more than the file's {} bytes could hold", kv_count, c.size()));
  if (tensor_count > c.left() / 32)
    c.fail(fmt::format("tensor count {} is more than the file's {} bytes could hold", tensor_count, c.size()));
  for (uint64_t i = 0; i < kv_count; ++i) {
    std::string key = c.string(fmt::format("metadata key {}", i), kMaxKeyBytes);
    if (key.empty()) c.fail(fmt::format("metadata key {} is empty", i));
    const std::string what = fmt::format("metadata '{}'", key);
    const GgufType t = value_type(c, what);
    GgufValue v = read_value(c, t, what);
    if (!f.metadata.emplace(std::move(key), std::move(v)).second) c.fail(fmt::format("{} appears twice", what));
  }
  if (const GgufValue* a = f.find("general.alignment")) {
    if (a->type != GgufType::u32 || !power_of_two(static_cast<uint64_t>(a->integer)))
      c.fail(fmt::format("metadata 'general.alignment': {} (a u32 power of two)", a->describe()));
    f.alignment = static_cast<uint64_t>(a->integer);
  }
  std::set<std::string, std::less<>> names;
  for (uint64_t i = 0; i < tensor_count; ++i) {
    GgufTensor t = read_tensor_info(c, i);
    if (!names.insert(t.name).second) c.fail(fmt::format("tensor '{}' appears twice", t.name));
    f.tensors.push_back(std::move(t));
  }
  // The data starts at the next multiple of the alignment.
  const uint64_t pad = (f.alignment - c.pos() % f.alignment) % f.alignment;
  if (pad > c.left() && !f.tensors.empty())
    c.fail(fmt::format("the tensor data would start at byte {}, past the end of the file ({} bytes)", c.pos() + pad,
                       c.size()));
  f.data_offset = c.pos() + pad;
  std::vector<const GgufTensor*> by_offset;
  for (GgufTensor& t : f.tensors) {
    if (t.offset % f.alignment != 0)
      c.fail(
          fmt::format("tensor '{}': offset {} is not a multiple of the alignment {}", t.name, t.offset, f.alignment));
    const uint64_t room = f.file_size - f.data_offset;
    if (t.offset > room || t.bytes > room - t.offset)
      c.fail(fmt::format("tensor '{}': {} bytes at data offset {} run past the end of the file ({} bytes of data)",
                         t.name, t.bytes, t.offset, room));
    t.offset += f.data_offset;
    by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (std::size_t i = 1; i < by_offset.size(); ++i)
    if (by_offset[i - 1]->offset + by_offset[i - 1]->bytes > by_offset[i]->offset)
      c.fail(fmt::format("tensors '{}' and '{}' overlap (bytes {} to {} and from {})", by_offset[i - 1]->name,
                         by_offset[i]->name, by_offset[i - 1]->offset,
                         by_offset[i - 1]->offset + by_offset[i - 1]->bytes, by_offset[i]->offset));
  return f;
}

}  // namespace mstar

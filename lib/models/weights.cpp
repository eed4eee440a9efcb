#include "models/weights.h"

#include <cmath>
#include <cstring>
#include <optional>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/errors.h"
#include "models/safetensors.h"

namespace mstar {

// A read-only memory map of a whole file, unmapped when the last tensor
// viewing it goes.
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw InputError(fmt::format("{}: cannot be opened", path.string()));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw InputError(fmt::format("{}: not a regular file", path.string()));
    }
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ > 0) {
      data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
      if (data_ == MAP_FAILED) {
        ::close(fd_);
        throw InputError(fmt::format("{}: cannot be memory-mapped", path.string()));
      }
    }
  }
  ~MappedFile() {
    if (data_ && data_ != MAP_FAILED) ::munmap(data_, size_);
    if (fd_ >= 0) ::close(fd_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const unsigned char* data() const { return static_cast<const unsigned char*>(data_); }
  std::size_t size() const { return size_; }

 private:
  int fd_ = -1;
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

namespace {

uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The first element whose exponent bits are all ones (an infinity or a NaN),
// by bits, so a scan of gigabytes stays a pass over memory.
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

}  // namespace

float dummy_value(const TensorSpec& t, uint64_t seed, int64_t i) {
  if (t.shape.size() == 1) return 1.0f;  // norms
  const uint64_t bits = splitmix64((fnv1a64(t.name) ^ (seed * 0x9E3779B97F4A7C15ull)) + static_cast<uint64_t>(i));
  const float u = static_cast<float>(bits >> 40) / static_cast<float>(1 << 23) - 1.0f;  // [-1, 1)
  return u / std::sqrt(static_cast<float>(t.shape.back()));
}

Weights Weights::dummy(const std::vector<TensorSpec>& specs, uint64_t seed) {
  Weights w;
  for (const TensorSpec& t : specs) {
    HostBuffer b(DType::f32, Shape{t.numel()});
    auto* p = static_cast<float*>(b.data());
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = dummy_value(t, seed, i);
    w.tensors_[t.name] = WeightTensor{DType::f32, t.shape, b.data(), b.bytes()};
    w.owned_.push_back(std::move(b));
  }
  return w;
}

Weights Weights::load(const std::vector<std::filesystem::path>& files, const std::vector<TensorSpec>& specs) {
  struct Found {
    size_t file;
    SafetensorsEntry entry;
  };
  std::vector<SafetensorsHeader> headers;
  std::map<std::string, Found> found;
  for (size_t f = 0; f < files.size(); ++f) {
    headers.push_back(read_safetensors_header(files[f]));
    for (const auto& [name, e] : headers.back().tensors)
      if (!found.emplace(name, Found{f, e}).second)
        throw InputError(fmt::format("{}: tensor '{}' is also in {}", files[f].string(), name,
                                     files[found.at(name).file].string()));
  }
  const std::string where = files.size() == 1 ? files[0].string() : fmt::format("{} (and {} more shards)",
                                                                                   files[0].string(), files.size() - 1);
  std::map<std::string, const TensorSpec*> wanted;
  for (const TensorSpec& t : specs) wanted[t.name] = &t;
  for (const auto& [name, f] : found)
    if (!wanted.count(name))
      throw InputError(fmt::format("{}: unexpected tensor '{}' (not part of this architecture)",
                                   files[f.file].string(), name));
  Weights w;
  for (const auto& file : files) w.maps_.push_back(std::make_shared<MappedFile>(file));
  for (const TensorSpec& t : specs) {
    auto it = found.find(t.name);
    if (it == found.end()) throw InputError(fmt::format("{}: tensor '{}' is missing", where, t.name));
    const std::string& file = files[it->second.file].string();
    const SafetensorsEntry& e = it->second.entry;
    const std::optional<DType> dt = find_dtype(e.dtype);
    if (!dt || e.dtype != safetensors_name(*dt))
      throw InputError(fmt::format("{}: tensor '{}' has dtype {} (expected F32, F16 or BF16)", file, t.name, e.dtype));
    if (e.shape != t.shape)
      throw InputError(fmt::format("{}: tensor '{}' has shape [{}], expected [{}]", file, t.name,
                                   fmt::join(e.shape, ", "), fmt::join(t.shape, ", ")));
    const uint64_t want = static_cast<uint64_t>(t.numel()) * dtype_size(*dt);
    if (e.end - e.begin != want)
      throw InputError(fmt::format("{}: tensor '{}' holds {} bytes, its shape needs {}", file, t.name,
                                   e.end - e.begin, want));
    const MappedFile& map = *w.maps_[it->second.file];
    const uint64_t at = headers[it->second.file].data_offset + e.begin;
    MSTAR_ASSERT(at + want <= map.size(), "the header check keeps every tensor inside its file");
    const unsigned char* src = map.data() + at;
    if (reinterpret_cast<uintptr_t>(src) % dtype_size(*dt) != 0) {
      // Elements must be aligned to be read in place; a file whose data
      // offsets are not gets this tensor copied once.
      HostBuffer b(*dt, Shape{t.numel()});
      std::memcpy(b.data(), src, want);
      src = static_cast<const unsigned char*>(b.data());
      w.owned_.push_back(std::move(b));
    }
    if (const auto bad = first_non_finite(src, *dt, static_cast<std::size_t>(t.numel())))
      throw InputError(fmt::format("{}: tensor '{}' holds {} at element {}: weights must be finite (every output "
                                   "would be garbage)",
                                   file, t.name, load_as_f32(src, *dt, *bad), *bad));
    w.tensors_[t.name] = WeightTensor{*dt, t.shape, src, static_cast<std::size_t>(want)};
  }
  return w;
}

const WeightTensor& Weights::get(const std::string& name) const {
  auto it = tensors_.find(name);
  MSTAR_ASSERT(it != tensors_.end(), "weights: no tensor '" + name + "'");
  return it->second;
}

std::size_t Weights::bytes() const {
  std::size_t b = 0;
  for (const auto& [n, t] : tensors_) b += t.bytes;
  return b;
}

void write_weights(const Weights& w, const std::vector<TensorSpec>& specs, const std::filesystem::path& path,
                   DType dtype) {
  std::vector<std::vector<unsigned char>> converted;  // moving the outer vector keeps each buffer where it is
  std::vector<TensorData> tensors;
  for (const auto& t : specs) {
    const WeightTensor& src = w.get(t.name);
    const auto n = static_cast<size_t>(t.numel());
    if (src.dtype == dtype) {
      tensors.push_back({t.name, dtype, t.shape, src.data, src.bytes});
      continue;
    }
    converted.emplace_back(n * dtype_size(dtype));
    for (size_t i = 0; i < n; ++i) store_from_f32(converted.back().data(), dtype, i, load_as_f32(src.data, src.dtype, i));
    tensors.push_back({t.name, dtype, t.shape, converted.back().data(), converted.back().size()});
  }
  write_safetensors(path, tensors);
}

}  // namespace mstar

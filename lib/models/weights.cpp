#include "models/weights.h"

#include <cmath>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/errors.h"
#include "models/safetensors.h"

namespace mstar {

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

Shape shape_of(const TensorSpec& t) {
  switch (t.shape.size()) {
    case 1: return Shape{t.shape[0]};
    case 2: return Shape{t.shape[0], t.shape[1]};
    default: throw InputError(fmt::format("tensor '{}': rank {} is not supported", t.name, t.shape.size()));
  }
}

// A read-only memory map of a whole file, unmapped on scope exit.
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

}  // namespace

float dummy_value(const TensorSpec& t, uint64_t seed, int64_t i) {
  if (t.shape.size() == 1) return 1.0f;  // norms
  const uint64_t bits = splitmix64((fnv1a64(t.name) ^ (seed * 0x9E3779B97F4A7C15ull)) + static_cast<uint64_t>(i));
  const float u = static_cast<float>(bits >> 40) / static_cast<float>(1 << 23) - 1.0f;  // [-1, 1)
  return u / std::sqrt(static_cast<float>(t.shape.back()));
}

Weights Weights::dummy(ModelKind kind, const Architecture& arch, uint64_t seed) {
  Weights w;
  for (const TensorSpec& t : expected_tensors(kind, arch)) {
    HostBuffer b(DType::f32, shape_of(t));
    auto* p = static_cast<float*>(b.data());
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = dummy_value(t, seed, i);
    w.tensors_.emplace(t.name, std::move(b));
  }
  return w;
}

Weights Weights::load_safetensors(const std::filesystem::path& file, ModelKind kind, const Architecture& arch) {
  const SafetensorsHeader h = read_safetensors_header(file);
  const MappedFile map(file);
  Weights w;
  for (const TensorSpec& t : expected_tensors(kind, arch)) {
    auto it = h.tensors.find(t.name);
    if (it == h.tensors.end())
      throw InputError(fmt::format("{}: tensor '{}' is missing", file.string(), t.name));
    const SafetensorsEntry& e = it->second;
    DType dt;
    if (e.dtype == "F32") dt = DType::f32;
    else if (e.dtype == "F16") dt = DType::f16;
    else if (e.dtype == "BF16") dt = DType::bf16;
    else throw InputError(fmt::format("{}: tensor '{}' has dtype {} (expected F32, F16 or BF16)", file.string(), t.name, e.dtype));
    if (e.shape != t.shape)
      throw InputError(fmt::format("{}: tensor '{}' has shape [{}], expected [{}]", file.string(), t.name,
                                   fmt::join(e.shape, ", "), fmt::join(t.shape, ", ")));
    const uint64_t want = static_cast<uint64_t>(t.numel()) * dtype_size(dt);
    if (e.end - e.begin != want)
      throw InputError(fmt::format("{}: tensor '{}' holds {} bytes, its shape needs {}", file.string(), t.name,
                                   e.end - e.begin, want));
    HostBuffer b(DType::f32, shape_of(t));
    const unsigned char* src = map.data() + h.data_offset + e.begin;
    auto* dst = static_cast<float*>(b.data());
    for (int64_t i = 0; i < t.numel(); ++i) {
      // The mapping need not be aligned for the element type: copy bytes.
      if (dt == DType::f32) std::memcpy(&dst[i], src + i * 4, 4);
      else {
        uint16_t bits;
        std::memcpy(&bits, src + i * 2, 2);
        dst[i] = dt == DType::f16 ? f16_to_f32(bits) : bf16_to_f32(bits);
      }
    }
    w.tensors_.emplace(t.name, std::move(b));
  }
  return w;
}

Weights Weights::from_manifest(const ModelManifest& m) {
  if (m.weights.dummy_seed) return dummy(m.kind, m.arch, static_cast<uint64_t>(*m.weights.dummy_seed));
  return load_safetensors(m.path.parent_path() / m.weights.file, m.kind, m.arch);
}

void write_weights(const Weights& w, ModelKind kind, const Architecture& arch, const std::filesystem::path& path,
                   DType dtype) {
  std::vector<std::vector<uint16_t>> narrow;  // moving the outer vector keeps each buffer where it is
  std::vector<TensorData> tensors;
  for (const auto& t : expected_tensors(kind, arch)) {
    const float* src = w.get(t.name);
    const auto n = static_cast<size_t>(t.numel());
    if (dtype == DType::f32) {
      tensors.push_back({t.name, dtype, t.shape, src, n * 4});
      continue;
    }
    narrow.emplace_back(n);
    for (size_t i = 0; i < n; ++i) narrow.back()[i] = dtype == DType::f16 ? f32_to_f16(src[i]) : f32_to_bf16(src[i]);
    tensors.push_back({t.name, dtype, t.shape, narrow.back().data(), n * 2});
  }
  write_safetensors(path, tensors);
}

const float* Weights::get(const std::string& name) const {
  auto it = tensors_.find(name);
  MSTAR_ASSERT(it != tensors_.end(), "weights: no tensor '" + name + "'");
  return static_cast<const float*>(it->second.data());
}

std::size_t Weights::bytes() const {
  std::size_t b = 0;
  for (const auto& [n, t] : tensors_) b += t.bytes();
  return b;
}

}  // namespace mstar

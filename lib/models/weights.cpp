#include "models/weights.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/errors.h"
#include "models/safetensors.h"
#include "models/stored_tensors.h"

namespace mstar {

// A weights file open for reading, closed when the load ends.
class WeightsFile {
 public:
  explicit WeightsFile(const std::filesystem::path& path) : path_(path.string()) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw InputError(fmt::format("{}: cannot be opened", path_));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw InputError(fmt::format("{}: not a regular file", path_));
    }
  }
  ~WeightsFile() { ::close(fd_); }
  WeightsFile(const WeightsFile&) = delete;
  WeightsFile& operator=(const WeightsFile&) = delete;

  // `bytes` from `offset` into dst. The header check saw them inside the
  // file; a file cut short since is an InputError, not a crash.
  void read(void* dst, uint64_t bytes, uint64_t offset) const {
    auto* out = static_cast<unsigned char*>(dst);
    for (uint64_t done = 0; done < bytes;) {
      const ssize_t n = ::pread(fd_, out + done, std::min<uint64_t>(bytes - done, uint64_t{1} << 30),
                                static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        throw InputError(
            fmt::format("{}: {} at byte {}", path_, n < 0 ? std::strerror(errno) : "ends early", offset + done));
      done += static_cast<uint64_t>(n);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
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
    w.tensors_[t.name] = WeightTensor{DType::f32, t.shape, b.data(), b.bytes(), t.matrix};
    w.owned_.push_back(std::move(b));
  }
  return w;
}

Weights Weights::load(const std::vector<std::filesystem::path>& files, const std::vector<TensorSpec>& specs,
                      const Progress& progress) {
  const std::map<std::string, StoredTensor> found = index_weights(files);
  const std::string where = files.size() == 1 ? files[0].string() : fmt::format("{} (and {} more shards)",
                                                                                   files[0].string(), files.size() - 1);
  std::map<std::string, const TensorSpec*> wanted;
  for (const TensorSpec& t : specs) wanted[t.name] = &t;
  for (const auto& [name, f] : found)
    if (!wanted.count(name))
      throw InputError(fmt::format("{}: unexpected tensor '{}' (not part of this architecture)", f.file.string(), name));
  int64_t total = 0, done = 0;
  for (const TensorSpec& t : specs)
    if (auto it = found.find(t.name); it != found.end()) total += static_cast<int64_t>(it->second.bytes);
  Weights w;
  std::map<std::filesystem::path, std::unique_ptr<WeightsFile>> open;
  for (const auto& file : files) open.emplace(file, std::make_unique<WeightsFile>(file));
  for (const TensorSpec& t : specs) {
    auto it = found.find(t.name);
    if (it == found.end()) throw InputError(fmt::format("{}: tensor '{}' is missing", where, t.name));
    const StoredTensor& e = it->second;
    const std::string file = e.file.string();
    if (!e.dtype)
      throw InputError(fmt::format("{}: tensor '{}' has dtype {} (expected {})", file, t.name, e.stored_dtype,
                                   safetensors_names()));
    const DType dt = *e.dtype;
    if (e.shape != t.shape)
      throw InputError(fmt::format("{}: tensor '{}' has shape [{}], expected [{}]", file, t.name,
                                   fmt::join(e.shape, ", "), fmt::join(t.shape, ", ")));
    const int64_t row = t.shape.empty() ? 1 : t.shape.back();
    if (!fits_blocks(dt, row))
      throw InputError(fmt::format("{}: tensor '{}' is {}, whose blocks of {} do not divide its rows of {}", file,
                                   t.name, to_string(dt), dtype_traits(dt).block, row));
    const uint64_t want = static_cast<uint64_t>(row_bytes(dt, t.numel()));
    if (e.bytes != want)
      throw InputError(fmt::format("{}: tensor '{}' holds {} bytes, its shape needs {}", file, t.name, e.bytes, want));
    // Read into host memory rather than mapped: large tensors land on 2 MiB
    // pages (allocate_host), so a decode step that streams every weight once
    // takes a TLB miss per 2 MiB, not per 4 KiB (docs/PERFORMANCE.md,
    // "Weights in memory"); and a file changed under a running engine cannot
    // take it down with SIGBUS.
    HostBuffer b(dt, Shape{t.numel()});
    open.at(e.file)->read(b.data(), want, e.offset);
    if (e.interleaved_heads > 0) {
      if (t.shape.size() != 2 || t.shape[0] % (2 * e.interleaved_heads) != 0)
        throw InputError(fmt::format("{}: tensor '{}' of shape [{}] is not {} heads of row pairs", file, t.name,
                                     fmt::join(t.shape, ", "), e.interleaved_heads));
      reorder_rope_rows(b.data(), t.shape[0], row_bytes(dt, t.shape[1]), e.interleaved_heads, RopeRows::halves);
    }
    const auto* src = static_cast<const unsigned char*>(b.data());
    w.owned_.push_back(std::move(b));
    if (const auto bad = first_non_finite(src, dt, static_cast<std::size_t>(t.numel())))
      throw InputError(fmt::format("{}: tensor '{}' holds {} at element {}: weights must be finite (every output "
                                   "would be garbage)",
                                   file, t.name, element_as_f32(src, dt, *bad), *bad));
    w.tensors_[t.name] = WeightTensor{dt, t.shape, src, static_cast<std::size_t>(want), t.matrix};
    done += static_cast<int64_t>(want);
    if (progress) progress("loading weights", done, total);
  }
  return w;
}

void Weights::lay_out(WeightTensor& t, kernels::WeightLayout want) {
  MSTAR_ASSERT(t.matrix && t.shape.size() == 2, "weights: a matrix is [out, in]");
  if (want == t.layout) return;
  const int64_t out = t.shape[0], in = t.shape[1];
  // Every tensor's bytes are owned_ by these Weights: data is const to their readers only.
  auto* w = static_cast<uint16_t*>(const_cast<void*>(t.data));
  if (want == kernels::WeightLayout::pair_panels)
    kernels::rows_to_pair_panels(w, out, in);
  else
    kernels::pair_panels_to_rows(w, out, in);
  t.layout = want;
}

void Weights::arrange_for(Backend b) {
  for (auto& [name, t] : tensors_)
    if (t.matrix) lay_out(t, kernels::matmul_layout(b, t.dtype, t.shape.at(1)));
}

void Weights::arrange(kernels::WeightLayout layout) {
  for (auto& [name, t] : tensors_)
    if (t.matrix)
      lay_out(t, kernels::layout_fits(layout, t.dtype, t.shape.at(1)) ? layout : kernels::WeightLayout::rows);
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

const void* row_major(const WeightTensor& t, std::vector<unsigned char>& copy) {
  if (t.layout == kernels::WeightLayout::rows) return t.data;
  const auto* bytes = static_cast<const unsigned char*>(t.data);
  copy.assign(bytes, bytes + t.bytes);
  kernels::pair_panels_to_rows(reinterpret_cast<uint16_t*>(copy.data()), t.shape[0], t.shape[1]);
  return copy.data();
}

void write_weights(const Weights& w, const std::vector<TensorSpec>& specs, const std::filesystem::path& path,
                   DType dtype) {
  std::vector<std::vector<unsigned char>> converted;  // moving the outer vector keeps each buffer where it is
  std::vector<TensorData> tensors;
  for (const auto& t : specs) {
    const WeightTensor& src = w.get(t.name);
    std::vector<unsigned char> rows;  // src row-major, where it is laid out otherwise
    const void* data = row_major(src, rows);
    if (src.dtype == dtype && data == src.data) {
      tensors.push_back({t.name, dtype, t.shape, src.data, src.bytes});
      continue;
    }
    if (src.dtype == dtype) {
      converted.push_back(std::move(rows));
      tensors.push_back({t.name, dtype, t.shape, converted.back().data(), converted.back().size()});
      continue;
    }
    converted.emplace_back(row_bytes(dtype, t.numel()));
    convert(data, src.dtype, converted.back().data(), dtype, t.numel());
    tensors.push_back({t.name, dtype, t.shape, converted.back().data(), converted.back().size()});
  }
  write_safetensors(path, tensors);
}

}  // namespace mstar

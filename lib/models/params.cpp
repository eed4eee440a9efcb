#include "models/params.h"

#include <vector>

namespace mstar {

ModelParams::ModelParams(const Weights& weights, Backend backend)
    : weights_(weights), alloc_(allocator_for(backend)) {}

kernels::WeightLayout ModelParams::layout(const std::string& name, DType dtype) const {
  const WeightTensor& t = weights_.get(name);
  return t.dtype == dtype && alloc_.device() == Device::cpu ? t.layout : kernels::WeightLayout::rows;
}

const void* ModelParams::get(const std::string& name, DType dtype) {
  const WeightTensor& t = weights_.get(name);
  if (t.dtype == dtype && alloc_.device() == Device::cpu) return t.data;
  auto key = std::make_pair(name, dtype);
  auto it = held_.find(key);
  if (it != held_.end()) return it->second.data();
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  std::vector<unsigned char> rows, converted;
  const void* src = row_major(t, rows);
  if (t.dtype != dtype) {
    converted.resize(row_bytes(dtype, n));
    convert(src, t.dtype, converted.data(), dtype, n);
    src = converted.data();
  }
  DeviceBuffer b(alloc_, row_bytes(dtype, n));
  alloc_.copy_from_host(b.data(), src, b.bytes());
  return held_.emplace(key, std::move(b)).first->second.data();
}

std::size_t ModelParams::extra_bytes() const {
  std::size_t b = 0;
  for (const auto& [k, buf] : held_) b += buf.bytes();
  return b;
}

}  // namespace mstar

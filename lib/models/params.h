#pragma once
// A model's tensors in the backend's memory, in the dtype the family computes
// with. On a host backend a tensor already in that dtype is used where it
// lies (the weights' own buffer, laid out as Weights::arrange_for left it:
// no copy); anything else is converted or uploaded once, on first use, and
// kept, row-major.
#include <cstddef>
#include <map>
#include <string>
#include <utility>

#include "kernels/backend.h"
#include "core/allocator.h"
#include "models/weights.h"

namespace mstar {

class ModelParams {
 public:
  ModelParams(const Weights& weights, Backend backend);

  // Tensor `name` in `dtype`, in the backend's memory, laid out as
  // layout(name, dtype) says.
  const void* get(const std::string& name, DType dtype);
  // How get(name, dtype) lays the tensor out: as the weights hold it where
  // it is used where it lies, else rows.
  kernels::WeightLayout layout(const std::string& name, DType dtype) const;
  const float* f32(const std::string& name) { return static_cast<const float*>(get(name, DType::f32)); }
  const Weights& weights() const { return weights_; }
  // Bytes held beyond the weights themselves (conversions and device copies).
  std::size_t extra_bytes() const;

 private:
  const Weights& weights_;
  Allocator& alloc_;
  std::map<std::pair<std::string, DType>, DeviceBuffer> held_;
};

}  // namespace mstar

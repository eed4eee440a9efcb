#pragma once
// The tensors a model of each kind expects, by name and shape: what a
// safetensors file must hold and what the dummy initialisation creates.
#include <cstdint>
#include <string>
#include <vector>

#include "models/manifest.h"

namespace mstar {

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  int64_t numel() const;
};

std::vector<TensorSpec> expected_tensors(ModelKind kind, const Architecture& arch);
// Bytes of every expected tensor in `dtype`.
std::size_t weights_bytes(ModelKind kind, const Architecture& arch, DType dtype);

}  // namespace mstar

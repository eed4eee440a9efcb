#pragma once
// A tensor a model expects, by name and shape: what a weights file must hold
// and what the dummy initialisation creates. Each family names its own.
#include <cstdint>
#include <string>
#include <vector>

namespace mstar {

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;  // any rank
  // A matrix [out, in] read by products, and by the embedding lookup
  // (which takes any layout) if at all: the weights may lay it out as the
  // backend's products read fastest (Weights::arrange_for).
  bool matrix = false;
  int64_t numel() const;
};

}  // namespace mstar

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
  // A trunk projection, [out, in], read by products alone: the weights may
  // lay it out as the backend's products read fastest (Weights::arrange_for).
  bool projection = false;
  int64_t numel() const;
};

}  // namespace mstar

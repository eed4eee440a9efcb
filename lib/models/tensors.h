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
  int64_t numel() const;
};

}  // namespace mstar

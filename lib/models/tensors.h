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
  // A matrix [out, in] that products read in the dtype it is stored in
  // (and the embedding lookup, which takes any layout, if at all): the
  // weights may lay it out as the backend's products read it fastest
  // (Weights::arrange_for). The in-house families compute with f32
  // matrices whatever their files store, through a conversion that reads
  // rows, so only the Hugging Face families mark theirs.
  bool matrix = false;
  int64_t numel() const;
};

}  // namespace mstar

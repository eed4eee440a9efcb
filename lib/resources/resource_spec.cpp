#include "resources/resource_spec.h"

namespace mstar {

std::vector<RequestState> copy_states(const std::vector<RequestState>& states) {
  std::vector<RequestState> out;
  for (const RequestState& s : states) out.push_back(s->copy());
  return out;
}

std::vector<int64_t> layers_or_all(const std::vector<int64_t>& layers, int64_t num_layers) {
  if (!layers.empty()) return layers;
  std::vector<int64_t> all(static_cast<size_t>(num_layers));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  return all;
}

}  // namespace mstar

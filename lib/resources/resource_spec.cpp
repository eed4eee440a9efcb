#include "resources/resource_spec.h"

namespace mstar {

std::vector<RequestState> copy_states(const std::vector<RequestState>& states) {
  std::vector<RequestState> out;
  for (const RequestState& s : states) out.push_back(s->copy());
  return out;
}

}  // namespace mstar

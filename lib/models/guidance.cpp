#include "models/guidance.h"

#include "core/errors.h"

namespace mstar {

std::span<const float> guide(std::span<const float> cond, std::span<const float> uncond, double scale,
                             std::vector<float>& out) {
  MSTAR_ASSERT(cond.size() == uncond.size(), "guidance: both rows are one vocabulary");
  out.resize(cond.size());
  const auto s = static_cast<float>(scale);
  for (std::size_t t = 0; t < cond.size(); ++t) out[t] = uncond[t] + s * (cond[t] - uncond[t]);
  return out;
}

}  // namespace mstar

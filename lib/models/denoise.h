#pragma once
// A denoising schedule of Euler steps, as the world family runs a frame:
// `steps` passes from noise level 1 down in equal steps, each moving the
// latents toward the model's prediction of the clean frame by
// 1 / (steps remaining), so the last step lands on the prediction; then
// one committing pass at level 0 over the clean frame.
#include <cstdint>

#include "core/errors.h"

namespace mstar {

struct EulerSchedule {
  int64_t steps = 1;  // denoising passes before the committing one

  // The noise level pass s (0 <= s < steps) is told: 1 at the first.
  float level(int64_t s) const {
    MSTAR_ASSERT(s >= 0 && s < steps, "a pass of the schedule");
    return 1.0f - static_cast<float>(s) / static_cast<float>(steps);
  }
  // How far pass s moves the latents toward its prediction: x += f * (pred - x).
  float step(int64_t s) const {
    MSTAR_ASSERT(s >= 0 && s < steps, "a pass of the schedule");
    return 1.0f / static_cast<float>(steps - s);
  }
  // The committing pass's level.
  static constexpr float kCleanLevel = 0.0f;
};

}  // namespace mstar

#pragma once
// The frames task: rollouts of a world model. Every step makes one frame for
// each running rollout (its model's denoising passes, then a committing pass,
// through the ring) and streams a summary of it; the latents themselves go
// to a frames directory when the run asks.
//
//   {"id": "w1", "frames": 24, "seed": 3, "controls": [[0.1, 0.2, 0.3, 0.4]]}
#include <filesystem>

#include "engine/program.h"

namespace mstar {

ProgramKind frame_program();

}  // namespace mstar

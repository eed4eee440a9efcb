#pragma once
// The world scheduler loop: every step makes one frame for each running
// rollout (denoising passes, then a committing pass) and streams it.
#include "engine/run.h"

namespace mstar {

RunStats run_world(const ResolvedDeployment& d, const Weights& weights, std::vector<RequestItem> items,
                   const RunOptions& options, const EventSink& events);

}  // namespace mstar

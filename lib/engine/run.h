#pragma once
// Running a deployment: builds the model's resources and weights, then
// streams every request through the continuous-batching scheduler, sending
// events (chunk, frame, done, error) as they happen.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/deployment.h"
#include "engine/requests.h"
#include "engine/stats.h"
#include "models/weights.h"

namespace mstar {

using EventSink = std::function<void(const nlohmann::json&)>;

struct RunOptions {
  // Requests to run instead of the workload's (mstar-run --requests).
  std::optional<std::vector<RequestItem>> requests;
  std::filesystem::path frames_dir;                   // world: write each frame's latents here
  std::function<void(const RunStats&)> on_step;     // after every step (progress)
};

// The workload's requests as RequestItems.
std::vector<RequestItem> workload_requests(const ResolvedDeployment& d);

RunStats run_deployment(const ResolvedDeployment& d, const Weights& weights, const RunOptions& options,
                        const EventSink& events);

}  // namespace mstar

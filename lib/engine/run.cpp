#include "engine/run.h"

#include "engine/tts_runner.h"
#include "engine/world_runner.h"

namespace mstar {

std::vector<RequestItem> workload_requests(const ResolvedDeployment& d) {
  std::vector<RequestItem> out;
  for (size_t i = 0; i < d.deployment.workload.requests.size(); ++i)
    out.push_back(parse_request(d.deployment.workload.requests[i], d.model, fmt::format("workload request {}", i)));
  return out;
}

RunStats run_deployment(const ResolvedDeployment& d, const Weights& weights, const RunOptions& options,
                        const EventSink& events) {
  std::vector<RequestItem> items = options.requests ? *options.requests : workload_requests(d);
  if (d.model.kind == ModelKind::tts) return run_tts(d, weights, std::move(items), options, events);
  return run_world(d, weights, std::move(items), options, events);
}

}  // namespace mstar

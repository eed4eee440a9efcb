#pragma once
// What a resolved deployment will cost, computed without allocating: per
// resource its geometry and bytes, the weights' bytes, and the total. The
// JSON object is the plan; the text is a rendering of it, so the two never
// disagree.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "config/deployment.h"

namespace mstar {

nlohmann::json memory_plan_json(const ResolvedDeployment& r);
std::string memory_plan_text(const nlohmann::json& plan);
// A byte count as the text prints it: "N (x.xx MiB)".
std::string plan_bytes(uint64_t bytes);

}  // namespace mstar

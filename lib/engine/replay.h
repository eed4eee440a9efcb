#pragma once
// mstar-replay's engine: runs a JSON trace through a resource and returns
// every step's admit outcome and attention outputs. The trace format is in
// docs/replay-format.md.
#include <nlohmann/json.hpp>

#include "kernels/backend.h"

namespace mstar {

// A trace holds every number it replays as JSON text; nothing larger is read.
constexpr std::size_t kMaxTraceBytes = std::size_t{256} << 20;

struct ReplayOptions {
  Backend backend = Backend::cpu;
  int threads = 1;
};

// Throws InputError (or ConfigError for the config) naming the trace path of
// anything malformed.
nlohmann::json replay_trace(const nlohmann::json& trace, const ReplayOptions& options);

}  // namespace mstar

#pragma once
// YAML forms of the resources' own value types.
//
//   retention: {sink: 4, window: 256}
//   retention: {sink: source + 4, window: 64, window_includes_step: true}
//   retention: {sink: {per_source: 1, plus: 4}, window: 64}
//
//   layers: [{ring_frames: 16, ring_buckets: 16, pinned_dilation: 1}, ...]   # one per layer
//   layers:                                                                   # or a pattern
//     pattern:
//       every: 4          # every 4th layer is global ...
//       offset: 3         # ... counting from layer 3 (default every - 1)
//       global: {ring_frames: 128, ring_buckets: 16, pinned_dilation: 8}
//       local: {ring_frames: 16, ring_buckets: 16, pinned_dilation: 1}
#include <string>
#include <vector>

#include "config/yaml_read.h"
#include "resources/bounded_kv/config.h"
#include "resources/ring_kv/config.h"

namespace mstar {

bool read_yaml(const YAML::Node& n, YamlContext& ctx, const std::string& path, RetentionRule& out, Range = {});
// Expands a pattern to ctx.layers_hint layers.
bool read_yaml(const YAML::Node& n, YamlContext& ctx, const std::string& path, std::vector<RingGeometry>& out,
               Range = {});

}  // namespace mstar

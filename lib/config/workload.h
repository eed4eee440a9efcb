#pragma once
// The work a deployment runs: voices (for tts) and requests, generated from a
// small spec into the same JSON objects `mstar-run --requests` reads, so
// every request takes one path into the scheduler.
//
//   workload:
//     chunk_tokens: 8           # tts: tokens per streamed chunk
//     guidance_scale: 1.5       # tts with rows_per_request 2
//     voices:
//       alice: {tokens: [12, 7, 99]}    # inline prompt codec tokens
//       bob: {file: ../voices/bob.txt}  # whitespace-separated tokens
//       carol: {seed: 3, length: 40}    # a seeded random prompt
//     requests:
//       count: 16
//       voices: [alice, bob]    # tts: round robin
//       prompt_tokens: 12       # tts: conditioning tokens (seeded)
//       max_tokens: 96          # tts
//       frames: 16              # world
//       sampling: {temperature: 0.8, top_k: 40, top_p: 0.95}
//       seed: 1                 # request i gets seed + i
//       arrival_every: 1        # steps between arrivals
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "config/yaml_read.h"
#include "models/manifest.h"

namespace mstar {

struct VoiceSpec {
  std::string name;
  std::vector<int32_t> tokens;
};

struct Workload {
  int64_t chunk_tokens = 8;
  double guidance_scale = 1.0;
  std::vector<VoiceSpec> voices;
  std::vector<nlohmann::json> requests;  // request objects, as --requests lines
};

// Reports problems through ctx; false when there were any.
bool read_workload(const YAML::Node& n, YamlContext& ctx, const ModelManifest& model,
                   const std::filesystem::path& config_dir, Workload& out);

// A deterministic token sequence (splitmix64 of seed and index) in [1, vocab).
std::vector<int32_t> seeded_tokens(uint64_t seed, int64_t length, int64_t vocab);

}  // namespace mstar

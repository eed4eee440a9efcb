#pragma once
// A deployment (configs/*.yaml): which model to run, on what backend, with
// what overrides of the model's resources, and how to schedule. The model's
// geometry is the manifest's; a deployment only tunes what suits the machine.
//
//   model: ../models/tiny-tts.yaml     # relative to this file
//   backend: cpu                       # reference | cpu | cuda
//   kv_dtype: bf16                     # optional: every resource's storage dtype
//   activations: f32                   # f32 (default) | bf16 | q8_0: rounded before each matrix product
//   threads: 2
//   resources:
//     voice_kv: {max_slots: 8}         # bounded_kv: max_slots; ring_kv: num_sessions
//   scheduler: {max_batch: 16}
//   workload: {...}                    # voices and requests, read by the engine (docs/running.md)
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/backend.h"
#include "config/diagnostics.h"
#include "config/manifest.h"
#include "config/yaml_read.h"
#include "core/fields.h"

namespace mstar {

struct SchedulerSettings {
  int64_t max_batch = 16;  // rows per step

  static constexpr auto fields() {
    using C = SchedulerSettings;
    return std::make_tuple(field("max_batch", &C::max_batch, Need::defaulted, "rows per step", Range{1, 1 << 16}));
  }
};

struct Deployment {
  std::filesystem::path path;    // the config file
  std::string model;             // as written (relative to the config)
  Backend backend = Backend::cpu;
  std::optional<DType> kv_dtype;
  // What the trunk's matrix products round activations to: f32 (exact),
  // bf16 (twice the products' speed where the processor has bf16 dot
  // products, at about three significant digits), or q8_0 (quantised per
  // block of 32 before products over a block type, for integer dot
  // products, as llama.cpp does for Q8_0 and Q4_0 weights; float matrices
  // keep f32). cpu and reference only.
  DType activations = DType::f32;
  int64_t threads = 1;
  SchedulerSettings scheduler;
  // The work to run, as the engine read it from the `workload` block: voices
  // (name -> token ids), program settings and the request generator
  // ({"count": n, ...}; the engine's program makes each request from it).
  nlohmann::json workload = nlohmann::json::object();
};

// A deployment with its manifest loaded and its overrides applied.
struct ResolvedDeployment {
  Deployment deployment;
  ModelManifest model;
};

// How the deployment's model is to run: its backend, threads and activations
// (what every builder of the model passes, so none can drop a setting).
ModelOptions model_options(const Deployment& d);
// The lengths of the workload's voices: the sources every resource that
// holds sources stores once (ResourceSpec::bytes).
std::vector<int64_t> voice_lengths(const Deployment& d);

// "dotted.key=value" overrides, applied on top of the file.
struct SetOverride {
  std::string key;    // dotted path
  std::string value;  // YAML text
  std::string text() const { return "--set " + key + "=" + value; }
};
// Splits "a.b=c"; throws ConfigError for a malformed one (a usage error).
SetOverride parse_set(const std::string& arg);

// Reads a deployment's `workload` block, whose form depends on the model's
// task (the engine knows it); reports problems through ctx and returns
// nullopt when there were any.
using WorkloadReader = std::function<std::optional<nlohmann::json>(
    const YAML::Node& block, YamlContext& ctx, const ModelManifest& model, const std::filesystem::path& config_dir)>;

// Everything wrong goes to diags (all of it, with places); nullopt when
// anything was. Without a workload reader a `workload` block is an error.
std::optional<ResolvedDeployment> resolve_deployment(const std::filesystem::path& path,
                                                     const std::vector<SetOverride>& sets, Diagnostics& diags,
                                                     const WorkloadReader& workload = {});

}  // namespace mstar

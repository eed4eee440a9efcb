#pragma once
// Model families, by name: each registers how its architecture is read, what
// task it serves, which resource type its attention needs, and how it is
// built. Nothing above the registry branches on a family.
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/backend.h"
#include "core/field_source.h"
#include "models/architecture.h"
#include "models/model.h"
#include "models/weights.h"

namespace mstar {

// What a family's architecture is read from. Families whose geometry the
// manifest states (tts, world) read its `architecture` block through
// `fields`; checkpoint families (llama, qwen2) read the Hugging Face folder
// `checkpoint` (its config.json) and take the manifest's serving choices.
struct ArchitectureInput {
  FieldSource* fields = nullptr;            // the manifest's architecture block, or null
  std::filesystem::path checkpoint;         // the checkpoint folder, or empty
  std::string positions = "stream";         // stream or cache (checkpoint families)
  std::function<void(const std::string&)> error;  // a problem of the checkpoint, with its file
};

struct ModelOptions {
  Backend backend = Backend::cpu;
  int threads = 1;
  // What the trunk's matrix products round activations to (f32: not at all;
  // bf16: MatmulParams::x_dtype; q8_0: quantised, for block-type weights
  // only), the deployment's `activations`.
  DType activations = DType::f32;
};

struct ModelFamily {
  std::string name;   // the manifest's `kind`
  std::string task;   // which engine program serves it: "speech" or "frames"
  std::string resource_type;  // what every attention layer's resource must be
  std::string summary;        // one line, for messages
  bool from_checkpoint = false;  // its manifest names a checkpoint folder instead of an architecture and weights
  // Reads and checks the architecture; reports every problem through the
  // input and returns null when there was any.
  std::function<std::unique_ptr<Architecture>(ArchitectureInput&)> read_architecture;
  // Checkpoint families: the weights files of a checkpoint folder.
  std::function<std::vector<std::filesystem::path>(const std::filesystem::path& folder)> weight_files;
  // Builds the model over weights that match arch.tensors() (weights must
  // outlive it).
  std::function<std::unique_ptr<Model>(const Architecture& arch, const Weights& weights, const ModelOptions& options)>
      make;
};

// The registered families; lookups throw nothing. A pointer stays valid
// for the process's life.
const ModelFamily* find_family(std::string_view name);
std::vector<std::string> family_names();
// Adds a family (one defined outside lib/models/families, an embedder's or
// a test's) to the registry, after the shipped ones. Throws ConfigError when
// its name is taken or it lacks a name, a task, a resource type, a reader or
// a constructor.
void register_family(ModelFamily family);

}  // namespace mstar

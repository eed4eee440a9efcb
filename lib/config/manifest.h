#pragma once
// A model manifest (models/*.yaml): which family the model is, its
// architecture (read by the family), its weights and the KV resources its
// attention layers use. Written once per model; a deployment
// (configs/*.yaml) points at it.
//
//   name: tiny-tts
//   kind: tts                      # a registered family (models/family.h)
//   architecture: {...}            # the family's own fields
//   weights: {dummy_seed: 7}       # or {file: w.safetensors} / {file: model.safetensors.index.json}
//   resources:
//     - resource_key: voice_kv
//
// A checkpoint family (llama, qwen2) names its Hugging Face folder instead of
// an architecture and weights, and may choose how cached keys carry positions:
//   checkpoint: ../path/to/folder   # config.json, model.safetensors or shards
//   positions: stream               # or cache
//
// Any model may name a tokenizer (a Hugging Face tokenizer.json, or a folder
// holding one and tokenizer_config.json), so requests and voices can be text;
// a checkpoint folder's own tokenizer.json is used when it has one:
//   tokenizer: ../path/to/tokenizer.json
//       type: bounded_kv           # what the family's attention needs
//       nodes: attn.*              # or [attn.0, attn.2, ...]: the layers it serves
//       config: {...}              # the resource's own fields
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/diagnostics.h"
#include "core/dtype.h"
#include "core/fields.h"
#include "models/architecture.h"
#include "models/family.h"
#include "models/weights.h"
#include "tokenizer/tokenizer.h"
#include "resources/resource_spec.h"

namespace mstar {

struct WeightsSpec {
  std::optional<int64_t> dummy_seed;  // deterministic dummy initialisation
  std::string file;                   // or a safetensors file or shard index, relative to the manifest
  DType dtype = DType::f32;           // the file's dtype, or what a dummy initialisation is stated as

  static constexpr auto fields() {
    using C = WeightsSpec;
    return std::make_tuple(
        field("dummy_seed", &C::dummy_seed, Need::defaulted, "seed of the dummy initialisation", at_least(0)),
        field("file", &C::file, Need::defaulted, "safetensors file or shard index, relative to the manifest"),
        field("dtype", &C::dtype, Need::defaulted, "weights dtype: f32, f16 or bf16"));
  }
};

struct ResourceDecl {
  SpecRef spec;  // of a registered type (config/resource_types.h)
  const std::string& key() const { return spec->key(); }
};

struct ModelManifest {
  std::string name;
  const ModelFamily* family = nullptr;
  std::shared_ptr<const Architecture> arch;
  WeightsSpec weights;                // families that state their architecture
  std::filesystem::path checkpoint;   // checkpoint families: the folder, resolved against the manifest
  std::vector<ResourceDecl> resources;
  std::filesystem::path path;  // where it was read from
  std::size_t weights_bytes = 0;  // every tensor as stored (or as the dummy initialisation makes it)
  std::filesystem::path tokenizer_path;          // empty: the model takes token ids only
  std::shared_ptr<const Tokenizer> tokenizer;    // loaded once, shared by whoever encodes

  std::vector<SpecRef> resource_specs() const;
  // The weights files (the shards of an index), resolved; empty for a dummy initialisation.
  std::vector<std::filesystem::path> weight_files() const;
  // The weights: read from the files, or the dummy initialisation, laid
  // out for backend b's products (Weights::arrange_for).
  Weights load_weights(Backend b, const Progress& progress = {}) const;
};

// Reads and checks a manifest; every problem goes to `diags` (with `label`
// naming the file) and the result is nullopt when there was any.
std::optional<ModelManifest> load_manifest(const std::filesystem::path& path, const std::string& label,
                                           Diagnostics& diags);

}  // namespace mstar

#pragma once
// Hugging Face decoders as speech models: what the "llama" and "qwen2"
// families (llama.cpp, qwen2.cpp beside this file) share
// (docs/hf-decoders.md). The architecture comes from the checkpoint folder's
// config.json (and generation_config.json when present), never from the
// manifest; the tensors keep Hugging Face's names and are used in the dtype
// they are stored in, as read from the files.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "models/architecture.h"
#include "models/family.h"

namespace mstar {

// rope_scaling, as config.json gives it ("rope_type", or "type" in older files).
struct RopeScaling {
  std::string type = "default";  // default, linear or llama3
  double factor = 1.0;
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  double original_max_position_embeddings = 8192;        // llama3
};

class HfArchitecture final : public Architecture {
 public:
  const TrunkShape& trunk() const override { return shape; }
  std::vector<TensorSpec> tensors() const override;
  nlohmann::json to_json() const override;
  int64_t vocab_size() const override { return vocab; }

  // The rotary frequencies of docs/hf-decoders.md, scaling applied.
  std::vector<double> inv_freq() const;

  std::string model_type;  // llama or qwen2
  TrunkShape shape;        // norm_eps from rms_norm_eps; qkv_bias for qwen2
  int64_t vocab = 0;
  double rope_theta = 10000;
  // The context it was trained for (config.json's max_position_embeddings,
  // GGUF's context_length): mstar's cache bounds what a step sees, so this is
  // only carried into files mstar writes.
  int64_t context_length = 4096;
  RopeScaling rope_scaling;
  // A GGUF's rope_freqs tensor (llama3 scaling as llama.cpp stores it):
  // frequency i is divided by element i. Empty: none.
  std::vector<double> rope_freq_divisors;
  bool tie_word_embeddings = false;
  std::optional<int64_t> bos;
  std::vector<int32_t> eos;  // tokens that end a stream (generation_config.json's when present)
  std::string positions = "stream";
  std::filesystem::path checkpoint;  // the folder, or the GGUF file
};

// What one Hugging Face decoder family adds to the shared reader and trunk.
struct HfDecoderKind {
  std::string model_type;  // config.json's model_type, and the family's name
  bool qkv_bias = false;   // q, k and v projections add a bias
  // config.json flags the family refuses when true (llama: attention_bias, mlp_bias).
  std::vector<std::string> refused_flags;
};

// Reads config.json (and generation_config.json) of `folder` for `kind`;
// every problem goes to `error`, naming the file, the key and the value.
// Null when there was any.
std::unique_ptr<HfArchitecture> read_hf_architecture(const HfDecoderKind& kind, const std::filesystem::path& folder,
                                                     const std::string& positions,
                                                     const std::function<void(const std::string&)>& error);

// The family of `kind`: the speech task over a bounded resource, read from a checkpoint folder.
ModelFamily hf_family(const HfDecoderKind& kind);

// The weights files of a checkpoint: a GGUF file itself, or a Hugging Face
// folder's shard index's shards, or its model.safetensors. Throws InputError
// naming the folder when it has neither.
std::vector<std::filesystem::path> hf_weight_files(const std::filesystem::path& folder);

}  // namespace mstar

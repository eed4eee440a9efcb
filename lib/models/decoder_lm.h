#pragma once
// A decoder language model over tokens, through bounded KV resources: the
// token model every speech family builds (docs/models.md, tts;
// docs/hf-decoders.md, llama and qwen2). A family describes its model in a
// DecoderSpec (tensor names, rotary frequencies, positions, end tokens);
// the forward is the same for all.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "models/family.h"
#include "models/model.h"
#include "models/params.h"
#include "models/scratch.h"
#include "models/trunk.h"

namespace mstar {

enum class PositionMode : unsigned char {
  stream,  // a key carries its stream position: rotated when written
  cache,   // a key carries its ordinal inside the retained cache: rotated on read (StreamingLLM)
};

struct DecoderSpec {
  TrunkShape shape;
  std::function<TrunkNames(int64_t)> names;
  std::string final_norm;          // the final norm's weight
  std::string final_norm_bias;     // its bias (a layer norm with one), or empty
  std::string embed;               // [vocab, width]: a token's row is its input
  std::string head;                // [vocab, width]: logits = final hidden . head^T (the embedding when tied)
  std::optional<DType> matrix_dtype;  // the dtype products read matrices in; nullopt: as stored
  std::vector<float> inv_freq;     // [head_dim / 2] rotary frequencies, scaling applied
  PositionMode positions = PositionMode::stream;
  int64_t vocab = 0;
  std::vector<int32_t> end_tokens;  // tokens that end a stream
};

class DecoderLM final : public TokenModel {
 public:
  // `arch` and `weights` must outlive the model.
  DecoderLM(const Architecture& arch, DecoderSpec spec, const Weights& weights, const ModelOptions& options);

  const Architecture& arch() const override { return arch_; }
  int64_t vocab_size() const override { return spec_.vocab; }
  std::vector<int32_t> end_tokens() const override { return spec_.end_tokens; }
  PositionMode positions() const { return spec_.positions; }

  void prefill_source(ResourceSet& kv, int id, std::span<const int32_t> tokens, int64_t rows) override;
  std::span<const float> step(ResourceSet& kv, const Step& step, const StepContext& ctx,
                              const std::vector<std::vector<int32_t>>& row_tokens) override;

 private:
  // Rotates every head of `tokens` tokens ([tokens, heads, head_dim]) to their positions.
  void rotate(float* x, int64_t tokens, int64_t heads, const int64_t* positions);
  // Each row's last token's logits, [rows, vocab], in host memory.
  std::span<const float> logits_of(const float* x, const std::vector<int32_t>& last);
  // The embeddings of `ids` into the backend's x buffer.
  float* embed(const std::vector<int32_t>& ids);

  const Architecture& arch_;
  DecoderSpec spec_;
  ModelOptions options_;
  ModelParams params_;
  Trunk trunk_;
  const void* embed_;
  DType embed_dtype_;
  kernels::WeightLayout embed_layout_;
  const void* head_;
  DType head_dtype_;
  kernels::WeightLayout head_layout_;
  float* inv_freq_;  // [head_dim / 2], backend memory
  DeviceScratch scratch_;
  std::vector<float> host_logits_;  // [rows, vocab]: the last step's logits, where scratch_ is not host memory
};

}  // namespace mstar

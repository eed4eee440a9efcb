#pragma once
// The "tts" family: mstar's own small voice-prompt speech model, a causal
// decoder over codec tokens (docs/models.md). A voice is a prompt of codec
// tokens prefilled once into a bounded-KV source shared by every request
// that speaks in it; a request prefills its own conditioning tokens
// (causally) and then decodes one token per step under the sink + window
// retention.
#include <cstdint>
#include <memory>
#include <vector>

#include "models/common_architecture.h"
#include "models/family.h"
#include "models/model.h"
#include "models/params.h"
#include "models/scratch.h"
#include "models/trunk.h"

namespace mstar {

struct TtsFields {
  int64_t vocab_size = 0;  // codec tokens
  int64_t end_token = 0;   // the token that ends a stream

  static constexpr auto fields() {
    using C = TtsFields;
    return std::make_tuple(field("vocab_size", &C::vocab_size, Need::required, "codec vocabulary", Range{2, 1 << 20}),
                           field("end_token", &C::end_token, Need::required, "token that ends a stream", at_least(0)));
  }
  bool operator==(const TtsFields&) const = default;
};

class TtsArchitecture final : public Architecture {
 public:
  TtsArchitecture(CommonArchitecture common, TtsFields tts) : common(common), tts(tts), shape_(common.trunk()) {}
  const TrunkShape& trunk() const override { return shape_; }
  std::vector<TensorSpec> tensors() const override;
  nlohmann::json to_json() const override;
  int64_t vocab_size() const override { return tts.vocab_size; }

  CommonArchitecture common;
  TtsFields tts;

 private:
  TrunkShape shape_;
};

enum class PositionMode : unsigned char { stream, cache };

class TtsModel final : public TokenModel {
 public:
  // `weights` must outlive the model.
  TtsModel(const TtsArchitecture& arch, const Weights& weights, const ModelOptions& options);

  const Architecture& arch() const override { return arch_; }
  int64_t vocab_size() const override { return arch_.tts.vocab_size; }
  std::vector<int32_t> end_tokens() const override { return {static_cast<int32_t>(arch_.tts.end_token)}; }
  PositionMode positions() const { return positions_; }

  void prefill_source(ResourceSet& kv, int id, std::span<const int32_t> tokens, int64_t rows) override;
  void step(ResourceSet& kv, const Step& step, const StepContext& ctx,
            const std::vector<std::vector<int32_t>>& row_tokens, std::vector<float>& logits) override;

 private:
  // Rotates every head of `tokens` tokens ([tokens, heads, head_dim]) to their positions.
  void rotate(float* x, int64_t tokens, int64_t heads, const int64_t* positions);
  // Each row's last token's logits, to the host.
  void logits_of(const float* x, const std::vector<int32_t>& last, std::vector<float>& logits);

  TtsArchitecture arch_;
  ModelOptions options_;
  ModelParams params_;
  Trunk trunk_;
  PositionMode positions_;
  const float* embed_;
  const float* head_;
  float* inv_freq_;  // [head_dim / 2], backend memory
  DeviceScratch scratch_;
};

ModelFamily tts_family();

}  // namespace mstar

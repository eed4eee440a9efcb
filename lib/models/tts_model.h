#pragma once
// The voice-prompt speech model: a causal decoder over codec tokens. A voice
// is a prompt of codec tokens prefilled once into a bounded-KV source shared
// by every request that speaks in it; a request prefills its own
// conditioning tokens (causally) and then decodes one token per step under
// the sink + window retention.
#include <cstdint>
#include <vector>

#include "models/manifest.h"
#include "models/transformer.h"
#include "models/weights.h"
#include "resources/bounded_kv/manager.h"

namespace mstar {

enum class PositionMode : unsigned char { stream, cache };

class TtsModel {
 public:
  // The manifest must be of kind tts; `weights` must outlive the model.
  TtsModel(const ModelManifest& m, const Weights& weights, Backend backend);

  const Architecture& arch() const { return arch_; }
  PositionMode positions() const { return positions_; }
  int64_t vocab() const { return arch_.tts.vocab_size; }

  // The K and V a voice prompt leaves in every layer, as a bounded source:
  // [layers, rows, kv_heads, len, head_dim] each. Row 0 holds the prompt;
  // with classifier-free guidance, row 1 holds the same prompt length of pad
  // tokens (0): the unconditional stream.
  struct SourceKV {
    std::vector<float> k, v;
    int64_t len = 0;
  };
  SourceKV prefill_source(const std::vector<int32_t>& voice, int64_t rows) const;

  // One planned step through the resource: row r writes row_tokens[r]
  // (causally among themselves); logits gets each row's last token's logits,
  // [rows, vocab].
  void step(BoundedKVManager& kv, const BoundedKVStep& step, const StepContext& ctx, const BoundedKVPlan& plan,
            const std::vector<std::vector<int32_t>>& row_tokens, std::vector<float>& logits) const;

  // The plain full-history path: logits after voice ++ tokens with dense
  // causal attention over everything, no cache. For tests and checks.
  std::vector<float> full_history_logits(const std::vector<int32_t>& voice, const std::vector<int32_t>& tokens) const;

 private:
  void embed(const std::vector<int32_t>& tokens, std::vector<float>& x) const;
  void rotate(float* x, int64_t heads, double pos) const;  // every head of one token
  void logits_of(const std::vector<float>& x, const std::vector<int64_t>& rows_last, std::vector<float>& logits) const;

  Architecture arch_;
  const Weights& w_;
  Transformer trunk_;
  PositionMode positions_;
  std::vector<float> inv_freq_;
};

}  // namespace mstar

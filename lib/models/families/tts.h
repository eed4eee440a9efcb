#pragma once
// The "tts" family: mstar's own small voice-prompt speech model, a causal
// decoder over codec tokens (docs/models.md), built as a DecoderLM.
#include <cstdint>
#include <memory>
#include <vector>

#include "models/common_architecture.h"
#include "models/family.h"
#include "models/decoder_lm.h"

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
  TtsArchitecture(CommonArchitecture c, TtsFields t) : common(c), tts(t), shape_(c.trunk()) {}
  const TrunkShape& trunk() const override { return shape_; }
  std::vector<TensorSpec> tensors() const override;
  nlohmann::json to_json() const override;
  int64_t vocab_size() const override { return tts.vocab_size; }

  CommonArchitecture common;
  TtsFields tts;

 private:
  TrunkShape shape_;
};

ModelFamily tts_family();

}  // namespace mstar

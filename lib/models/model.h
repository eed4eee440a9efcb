#pragma once
// What a built model offers the engine. A family builds one of two kinds:
// a token model (speech: a decoder LM over codec tokens, one token a step per
// request, voices prefilled once into shared sources) or a frame model
// (frame rollouts through a ring). The engine drives each through its
// resources; the models never see requests or events.
#include <cstdint>
#include <span>
#include <vector>

#include "models/architecture.h"
#include "resources/resource_set.h"

namespace mstar {

class Model {
 public:
  virtual ~Model() = default;
  virtual const Architecture& arch() const = 0;
};

class TokenModel : public Model {
 public:
  virtual int64_t vocab_size() const = 0;
  // Tokens that end a stream.
  virtual std::vector<int32_t> end_tokens() const = 0;
  // Prefills `tokens` (a voice) into source `id`, which every bounded
  // resource of `kv` has registered with tokens.size() entries. Row 0 holds
  // the voice; with rows 2 (classifier-free guidance) row 1 holds as many pad
  // tokens (0): the unconditional stream.
  virtual void prefill_source(ResourceSet& kv, int id, std::span<const int32_t> tokens, int64_t rows) = 0;
  // One planned step: batch row r writes row_tokens[r] (causally among
  // themselves). Returns each row's last token's logits, [rows, vocab], in
  // host memory that the model owns and reuses: valid until its next call.
  [[nodiscard]] virtual std::span<const float> step(ResourceSet& kv, const Step& step, const StepContext& ctx,
                                                    const std::vector<std::vector<int32_t>>& row_tokens) = 0;
};

class FrameModel : public Model {
 public:
  virtual int64_t tokens_per_frame() const = 0;
  virtual int64_t channels() const = 0;     // latent channels per token
  virtual int64_t control_dim() const = 0;  // entries of a frame's control vector
  // One frame for each of the planned step's B rows: from `noise` [B, T, C]
  // and `controls` [B, control_dim] (host), the model's denoising passes
  // (which do not commit) then its committing pass. Returns the clean
  // latents [B, T, C] on the host.
  virtual std::vector<float> generate(ResourceSet& kv, std::span<const int64_t> frame_pos,
                                      const std::vector<float>& noise, const std::vector<float>& controls) = 0;
};

}  // namespace mstar

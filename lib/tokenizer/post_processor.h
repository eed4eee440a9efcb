#pragma once
// The post-processors mstar accepts: null, ByteLevel (it moves offsets only,
// so ids are untouched), TemplateProcessing, and a Sequence of those.
#include <cstdint>
#include <optional>
#include <vector>

#include "tokenizer/json_at.h"

namespace mstar::tok {

class PostProcessor {
 public:
  static PostProcessor from_json(const JsonAt* j);

  // Applies the single-sequence templates to `ids` (the encoded text); with
  // add_special_tokens false the reference leaves the ids as they are.
  void apply(std::vector<int32_t>& ids, bool add_special_tokens) const;

  // The first template's special tokens right before and right after $A, when
  // each is a single id: what BOS and EOS fall back to.
  std::optional<int32_t> bos() const { return bos_; }
  std::optional<int32_t> eos() const { return eos_; }
  // Every id a template can add.
  std::vector<int32_t> template_ids() const;

 private:
  struct Piece {
    bool sequence = false;        // $A
    std::vector<int32_t> ids;     // a special token's ids
  };
  using Template = std::vector<Piece>;
  static Template read_template(const JsonAt& list, const JsonAt& special_tokens, bool pair);

  std::vector<Template> singles_;  // applied in order
  std::optional<int32_t> bos_, eos_;
};

}  // namespace mstar::tok

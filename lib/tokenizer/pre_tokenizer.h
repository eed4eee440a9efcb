#pragma once
// The pre-tokenizer: Split steps (a pattern and a delimiter behaviour) and a
// final ByteLevel step, alone or in a Sequence. Each step cuts every piece
// the previous one produced; the pieces of the last step go to the model as
// raw bytes (ByteLevel's character mapping is folded into the model, which
// looks its vocabulary up by bytes).
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tokenizer/json_at.h"
#include "tokenizer/regex.h"

namespace mstar::tok {

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

class PreTokenizer {
 public:
  // Reads tokenizer.json's "pre_tokenizer" value; refuses anything but Split
  // and ByteLevel steps, and a chain that does not end in ByteLevel.
  static PreTokenizer from_json(const JsonAt& j);

  // Calls emit(piece) for each pre-token of `text`, in order.
  template <class F>
  void run(std::string_view text, F&& emit) const {
    using Fn = std::remove_reference_t<F>;
    Emit e{const_cast<void*>(static_cast<const void*>(&emit)), [](void* f, std::string_view s) { (*static_cast<Fn*>(f))(s); }};
    step(0, text, e);
  }

 private:
  struct Emit {
    void* f;
    void (*call)(void*, std::string_view);
  };
  struct Step {
    bool byte_level = false;
    Regex regex;  // Split: its pattern; ByteLevel: the GPT-2 pattern when use_regex
    SplitBehavior behavior = SplitBehavior::Isolated;
    bool invert = false;
    bool add_prefix_space = false;
    bool use_regex = false;
  };
  void step(size_t k, std::string_view text, const Emit& emit) const;
  void next(size_t k, std::string_view piece, const Emit& emit) const;

  std::vector<Step> steps_;
};

}  // namespace mstar::tok

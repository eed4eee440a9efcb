#pragma once
// Hugging Face tokenizer.json for byte-level BPE (the Llama 3 and Qwen2
// families), giving exactly the ids of the reference `tokenizers` library's
// tokenizer.encode(text, add_special_tokens) and the text of its decode.
//
// What a tokenizer.json may hold is checked when it is loaded: anything mstar
// does not implement and that could change the tokens is refused with a
// ConfigError naming the file, the JSON path and the value (docs/tokenizer.md
// lists the supported subset). Text that is not well-formed UTF-8 is refused
// with an InputError naming the byte offset.
//
// A Tokenizer is immutable once loaded and may be shared by threads; copies
// share one loaded vocabulary.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace mstar {

namespace tok {
struct TokenizerImpl;
}

struct SpecialToken {
  int32_t id;
  std::string content;
};

class TokenStreamDecoder;

class Tokenizer {
 public:
  // A tokenizer.json file, a directory holding tokenizer.json and, when
  // present, tokenizer_config.json (read for bos_token and eos_token), or a
  // GGUF file's tokenizer (tokenizer/gguf_vocab.h).
  static Tokenizer from_file(const std::filesystem::path& path);
  // `label` names the source in error messages (a file path, say).
  static Tokenizer from_json(const nlohmann::json& tokenizer_json, const std::string& label,
                             const nlohmann::json* tokenizer_config = nullptr,
                             const std::string& config_label = "tokenizer_config.json");

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
  // The most text mstar's tools hand one encode call (mstar-tokenize,
  // mstar-bench tokenize). Encoding holds about 16 bytes per input byte at
  // its peak (64 MiB of English text: about 1 GiB resident with
  // tests/data/tokenizer/llama3-mini), so this bounds their memory.
  static constexpr std::size_t kMaxToolInputBytes = std::size_t{64} << 20;
  // Throws InputError for an id outside the vocabulary (the reference drops
  // such ids silently).
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  // Counts the model's vocabulary and the added tokens outside it.
  size_t vocab_size() const;
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The token as written in tokenizer.json (byte-level characters for model
  // tokens); nullopt for an id without a token.
  std::optional<std::string> id_to_token(int32_t id) const;
  // Added tokens marked special, in file order.
  const std::vector<SpecialToken>& special_tokens() const;
  bool is_special(int32_t id) const;

  // tokenizer_config.json's bos_token / eos_token when it names one, else the
  // special token right before / after $A in the post-processor's template.
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;
  // Whether encode(text, true) starts with the BOS id.
  bool adds_bos() const;

 private:
  explicit Tokenizer(std::shared_ptr<const tok::TokenizerImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const tok::TokenizerImpl> impl_;
  friend class TokenStreamDecoder;
};

// Decodes ids as they arrive, never splitting a UTF-8 character across two
// outputs: bytes of an incomplete character wait for the ids that complete
// it. The concatenation of every push() and finish() equals
// Tokenizer::decode of all the ids the tokenizer can spell. An id it cannot
// (a model's vocabulary is often larger than its tokenizer's: real Qwen2.5
// checkpoints have 151,936 rows for about 151,665 tokens) decodes to
// nothing and is never an error: a stream that draws one goes on.
class TokenStreamDecoder {
 public:
  explicit TokenStreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false);

  // The text that `ids` complete (possibly empty).
  std::string push(std::span<const int32_t> ids);
  std::string push(int32_t id) { return push(std::span<const int32_t>(&id, 1)); }
  // The rest: an incomplete trailing character becomes U+FFFD. The decoder
  // can be used again afterwards, as if new.
  std::string finish();

  // What the decoder holds between pushes: the bytes of an unfinished
  // <0xNN> run and of an incomplete character. Saved with a stream and given
  // back to a decoder of the same tokenizer, it continues the text exactly.
  struct State {
    std::string run, pending;
  };
  State state() const { return {run_, pending_}; }
  void restore(State s) {
    run_ = std::move(s.run);
    pending_ = std::move(s.pending);
  }

 private:
  std::shared_ptr<const tok::TokenizerImpl> impl_;
  bool skip_special_;
  std::string run_;      // <0xNN> bytes waiting for the end of their run
  std::string pending_;  // decoded bytes of an incomplete character
};

}  // namespace mstar

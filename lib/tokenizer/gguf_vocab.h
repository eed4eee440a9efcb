#pragma once
// The tokenizer a GGUF file carries (tokenizer.ggml.*), as the tokenizer.json
// it stands for: a gpt2-style byte-level BPE vocabulary and merges, its
// pre-tokenizer named by tokenizer.ggml.pre, its control and user-defined
// tokens as added tokens, BOS and EOS by id (docs/gguf.md, "Tokenizer").
// Building that JSON and loading it through the one tokenizer.json loader
// means a GGUF's tokenizer gives the ids the model's tokenizer.json gives.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/gguf.h"

namespace mstar::tok {

struct GgufVocab {
  nlohmann::json tokenizer;  // as tokenizer.json
  nlohmann::json config;     // as tokenizer_config.json: bos_token, eos_token
};

// Throws ConfigError naming the file, the key and the value: no tokenizer
// in the file, a model other than gpt2, a pre-tokenizer mstar has no
// definition for, token and type arrays of different lengths, a token type
// outside GGUF's, a BOS or EOS id outside the vocabulary.
GgufVocab gguf_vocab(const GgufFile& f);

// The other way: a byte-level BPE tokenizer.json (and its model's BOS, EOS
// and whether encoding adds BOS) as tokenizer.ggml.* metadata for `pre`
// (llama-bpe or qwen2), ids past the tokenizer's up to `vocab` as unused
// "[PAD{id}]" tokens (llama.cpp's converter's way). Throws ConfigError
// naming `label`: a model other than BPE, a pre-tokenizer name mstar has no
// definition for, more tokens than `vocab`, an id repeated or missing.
std::vector<std::pair<std::string, GgufValue>> gguf_tokenizer_metadata(const nlohmann::json& tokenizer_json,
                                                                       const std::string& label, const std::string& pre,
                                                                       int64_t vocab, std::optional<int32_t> bos,
                                                                       std::optional<int32_t> eos, bool add_bos);

}  // namespace mstar::tok

#pragma once
// The tokenizer a GGUF file carries (tokenizer.ggml.*), as the tokenizer.json
// it stands for: a gpt2-style byte-level BPE vocabulary and merges, its
// pre-tokenizer named by tokenizer.ggml.pre, its control and user-defined
// tokens as added tokens, BOS and EOS by id (docs/gguf.md, "Tokenizer").
// Building that JSON and loading it through the one tokenizer.json loader
// means a GGUF's tokenizer gives the ids the model's tokenizer.json gives.
#include <string>

#include <nlohmann/json.hpp>

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

}  // namespace mstar::tok

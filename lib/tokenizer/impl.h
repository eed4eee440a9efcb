#pragma once
// What a loaded tokenizer holds; loader.cpp builds it, tokenizer.cpp runs it.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace mstar::tok {

struct TokenizerImpl {
  enum class Kind : uint8_t { None, Model, Added };

  std::string label;
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  std::unique_ptr<BpeModel> model;
  PostProcessor post;

  std::vector<AddedToken> added;      // file order
  AddedTokenMatcher raw_matcher;      // added tokens with normalized: false
  AddedTokenMatcher normal_matcher;   // normalized: true, matched after normalizing
  BytesIdMap added_by_content;

  std::vector<Kind> kind;             // by id
  std::vector<int32_t> added_index;   // by id: index into `added`, or -1
  std::vector<bool> special;          // by id
  Decoder decoder;
  size_t vocab_size = 0;

  std::vector<SpecialToken> specials;
  std::optional<int32_t> bos, eos;
  bool adds_bos = false;

  bool valid_id(int32_t id) const {
    return id >= 0 && static_cast<size_t>(id) < kind.size() && kind[id] != Kind::None;
  }
  // Throws InputError for an id without a token.
  void check_id(int32_t id) const;
  void encode(std::string_view text, bool add_special_tokens, std::vector<int32_t>& out) const;
};

std::shared_ptr<TokenizerImpl> load_tokenizer(const nlohmann::json& tokenizer, const std::string& label,
                                              const nlohmann::json* config, const std::string& config_label);

}  // namespace mstar::tok

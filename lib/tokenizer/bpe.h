#pragma once
// The BPE model over byte-level text. The reference maps each byte to its
// byte-level character and looks strings of those characters up; the mapping
// is one-to-one, so this model keys its vocabulary by the bytes the tokens
// stand for and skips the mapping. Merges are keyed by id pairs.
//
// Per word: the whole word when ignore_merges and it is in the vocabulary;
// else a cache hit; else the merge loop, which always applies the lowest-rank
// merge among adjacent pairs, leftmost first (what the reference's priority
// queue yields).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/hash_tables.h"
#include "tokenizer/json_at.h"
#include "tokenizer/word_cache.h"

namespace mstar::tok {

class BpeModel {
 public:
  // Reads tokenizer.json's "model" value.
  static std::unique_ptr<BpeModel> from_json(const JsonAt& j);

  // Appends the ids of one pre-token (raw bytes) to `out`.
  void tokenize(std::string_view word, std::vector<int32_t>& out) const;

  // The merge loop alone, on symbols already looked up (exposed so tests can
  // hold the short-word scan and the long-word queue to the same answers).
  void merge_scan(std::vector<int32_t>& symbols) const;
  void merge_queue(std::vector<int32_t>& symbols) const;

  size_t vocab_size() const { return by_string_.size(); }
  int32_t max_id() const { return static_cast<int32_t>(id_to_token_.size()) - 1; }
  // The token string as written in tokenizer.json, or nullptr for an id the
  // vocabulary does not have.
  const std::string* token(int32_t id) const;
  int32_t find(std::string_view token) const { return by_string_.find(token); }

 private:
  BpeModel() : cache_(1 << 16) {}
  void initial_symbols(std::string_view word, std::vector<int32_t>& out) const;

  std::vector<std::string> id_to_token_;
  std::vector<bool> has_id_;
  BytesIdMap by_string_;  // the token strings as written (byte-level characters)
  BytesIdMap by_bytes_;   // the bytes each byte-level token stands for
  MergeMap merges_;
  int32_t byte_ids_[256];
  // With byte_fallback: per byte, the <0xXX> ids of its byte-level
  // character's UTF-8 (what the reference falls back to), empty when any is
  // missing from the vocabulary.
  std::vector<int32_t> fallback_[256];
  int32_t unk_id_ = -1;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  WordCache cache_;
};

}  // namespace mstar::tok

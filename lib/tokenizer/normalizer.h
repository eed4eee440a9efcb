#pragma once
// The normalizers mstar accepts: none, or NFC (alone or in a Sequence of NFC
// steps). NFC is utf8proc's, applied to each piece of text between added
// tokens, as the reference does.
#include <string>
#include <string_view>

#include "tokenizer/json_at.h"

namespace mstar::tok {

class Normalizer {
 public:
  // Reads tokenizer.json's "normalizer" value (null or absent: none).
  static Normalizer from_json(const JsonAt* j);

  bool is_identity() const { return !nfc_; }
  // Returns `in` unchanged (as a view) when normalization leaves it as is,
  // else writes the normalized text to `buf` and returns a view of it.
  std::string_view apply(std::string_view in, std::string& buf) const;

 private:
  bool nfc_ = false;
};

// NFC of well-formed UTF-8 text.
std::string nfc(std::string_view in);

}  // namespace mstar::tok

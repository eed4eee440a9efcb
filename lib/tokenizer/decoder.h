#pragma once
// Decoding: the decoder mstar accepts is ByteLevel (alone or as the only step
// of a Sequence). As in the reference, each token's characters are mapped
// back to bytes, a token holding any character outside the byte-level
// alphabet (an added token such as "<|im_start|>" is inside it, being ASCII)
// is taken as its own UTF-8, and the joined bytes are read as UTF-8 with each
// ill-formed part replaced by U+FFFD.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/json_at.h"

namespace mstar::tok {

class TokenBytes {
 public:
  // Checks tokenizer.json's "decoder" value.
  static void check_decoder(const JsonAt& j);

  // Stores the decoded bytes of `token` for `id`.
  void set(int32_t id, std::string_view token);
  // The bytes of `id`; `id` must have been set.
  std::string_view get(int32_t id) const {
    return std::string_view(arena_).substr(off_[id], off_[id + 1] - off_[id]);
  }
  void finish();  // after the last set(), before any get()

 private:
  std::vector<std::pair<int32_t, std::string>> pending_;
  std::string arena_;
  std::vector<uint32_t> off_;
};

}  // namespace mstar::tok

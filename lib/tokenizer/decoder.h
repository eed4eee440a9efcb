#pragma once
// Decoding: the decoder mstar accepts is ByteLevel (alone or as the only step
// of a Sequence). A model token's characters are mapped back to the bytes
// they stand for (a token holding a character outside the byte-level
// alphabet is taken as its own UTF-8, as in the reference); an added token is
// its content. The joined bytes are read as UTF-8, each ill-formed part
// replaced by U+FFFD.
//
// Added tokens: Rust `tokenizers` releases before its fix of issues #1392 and
// #1996 (pull request #1995, 2026) ran them through the ByteLevel decoder
// too, which garbles contents with Latin-1 letters ("naïveté" came out with
// U+FFFD). The JavaScript reference and the fixed library give the content;
// so does mstar. For ASCII contents, as in every Llama 3 and Qwen2 file, all
// of them agree.
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

  // Stores the bytes a model token stands for.
  void set_model(int32_t id, std::string_view token);
  // Stores an added token's content; it replaces a model token of that id.
  void set_added(int32_t id, std::string_view content);
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

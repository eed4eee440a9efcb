#pragma once
// Decoding, as the reference's decoders do it. mstar accepts ByteLevel, alone
// or as a Sequence of one, and the Sequence [ByteFallback, ByteLevel].
//  - ByteLevel: a model token's characters are mapped back to the bytes they
//    stand for; a token holding a character outside the byte-level alphabet
//    is taken as its own UTF-8.
//  - ByteFallback, before it: each run of <0xNN> model tokens becomes the
//    text those bytes spell when they are valid UTF-8 (then mapped by
//    ByteLevel like any token), else one U+FFFD per byte. Without it, a
//    <0xNN> token is just six characters, as in the reference.
//  - An added token is its content.
// The joined bytes are read as UTF-8, each ill-formed part replaced by
// U+FFFD.
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

class Decoder {
 public:
  // Reads tokenizer.json's "decoder" value.
  static Decoder from_json(const JsonAt& j);

  void set_model(int32_t id, std::string_view token);
  // An added token's content; it replaces a model token of that id.
  void set_added(int32_t id, std::string_view content);
  void finish();  // after the last set_*, before decoding

  // Appends what `id` decodes to onto `bytes`. A <0xNN> token (with
  // ByteFallback) goes to `run` instead, which the next other token, or
  // end_run(), resolves. `id` must have been set.
  void feed(int32_t id, std::string& run, std::string& bytes) const {
    if (byte_fallback_ && fallback_byte_[id] >= 0) {
      run.push_back(static_cast<char>(fallback_byte_[id]));
      return;
    }
    if (!run.empty()) end_run(run, bytes);
    bytes.append(std::string_view(arena_).substr(off_[id], off_[id + 1] - off_[id]));
  }
  void end_run(std::string& run, std::string& bytes) const;

 private:
  bool byte_fallback_ = false;
  std::vector<std::pair<int32_t, std::string>> pending_;
  std::string arena_;
  std::vector<uint32_t> off_;
  std::vector<int16_t> fallback_byte_;  // by id: the byte of a model <0xNN> token, or -1
};

// The byte a token written <0xNN> stands for, read as the reference reads it
// (six bytes, two of them parsed by Rust's u8::from_str_radix(_, 16)), or -1.
int fallback_byte(std::string_view token);

}  // namespace mstar::tok

#pragma once
// UTF-8 as mstar reads it (tokenizers, GGUF keys and strings): validation
// that names the first bad byte, and the lossy decoding the tokenizer
// reference applies to decoded bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mstar {

inline constexpr size_t kValidUtf8 = static_cast<size_t>(-1);

// Byte offset of the first byte that is not part of a well-formed UTF-8
// sequence (no overlong forms, no surrogates, nothing above U+10FFFF), or
// kValidUtf8 when the whole text is well formed.
size_t find_invalid_utf8(std::string_view s);

void append_utf8(std::string& out, char32_t cp);

// Decodes the code point starting at s[i]; s must be well-formed UTF-8.
inline char32_t next_code_point(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  auto cont = [&](size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(s[i + k]) & 0x3F); };
  char32_t cp;
  if (b0 < 0xE0) {
    cp = (static_cast<char32_t>(b0 & 0x1F) << 6) | cont(1);
    i += 2;
  } else if (b0 < 0xF0) {
    cp = (static_cast<char32_t>(b0 & 0x0F) << 12) | (cont(1) << 6) | cont(2);
    i += 3;
  } else {
    cp = (static_cast<char32_t>(b0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3);
    i += 4;
  }
  return cp;
}

// Appends `bytes` to `out` as valid UTF-8, each maximal ill-formed subpart
// replaced by one U+FFFD: the policy of Rust's String::from_utf8_lossy, which
// the reference decoder ends with. When `final` is false, a trailing sequence
// that is still a valid prefix of a character is left unconsumed so that more
// bytes can complete it. Returns the number of bytes consumed.
size_t append_lossy_utf8(std::string_view bytes, bool final, std::string& out);

}  // namespace mstar

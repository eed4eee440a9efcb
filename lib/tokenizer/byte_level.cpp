#include "tokenizer/byte_level.h"

#include <array>

#include "core/utf8.h"

namespace mstar::tok {
namespace {

struct Tables {
  std::array<char32_t, 256> to_char{};
  std::array<int, kByteLevelMaxChar + 1> to_byte{};
  Tables() {
    to_byte.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_char[b] = printable ? static_cast<char32_t>(b) : next++;
      to_byte[to_char[b]] = b;
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t byte_level_char(unsigned char b) { return tables().to_char[b]; }

int byte_level_byte(char32_t c) { return c <= kByteLevelMaxChar ? tables().to_byte[c] : -1; }

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char b : bytes) append_utf8(out, byte_level_char(static_cast<unsigned char>(b)));
  return out;
}

std::optional<std::string> byte_level_decode(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (size_t i = 0; i < token.size();) {
    const int b = byte_level_byte(next_code_point(token, i));
    if (b < 0) return std::nullopt;
    out.push_back(static_cast<char>(b));
  }
  return out;
}

}  // namespace mstar::tok

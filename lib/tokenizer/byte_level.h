#pragma once
// GPT-2's byte-level alphabet: every byte is written as one printable
// character so that a vocabulary of strings can hold arbitrary bytes.
// Bytes 0x21-0x7E, 0xA1-0xAC and 0xAE-0xFF stand for themselves; the other 68
// bytes take U+0100..U+0143 in increasing byte order.
#include <optional>
#include <string>
#include <string_view>

namespace mstar::tok {

inline constexpr char32_t kByteLevelMaxChar = 0x143;

// The character that stands for byte b.
char32_t byte_level_char(unsigned char b);

// The byte a character stands for, or -1 when it is not in the alphabet.
int byte_level_byte(char32_t c);

// Writes each byte of `bytes` as its byte-level character (UTF-8).
std::string byte_level_encode(std::string_view bytes);

// The bytes a byte-level string stands for; nullopt when any character is
// outside the alphabet. `token` must be well-formed UTF-8.
std::optional<std::string> byte_level_decode(std::string_view token);

}  // namespace mstar::tok

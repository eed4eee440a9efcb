#include "core/utf8.h"

namespace mstar {
namespace {

// How many bytes a sequence starting with `lead` has, and the range its
// second byte must fall in (Unicode Table 3-7); 0 for a byte that cannot lead.
struct Lead {
  int len;
  unsigned char lo, hi;
};

constexpr Lead lead_of(unsigned char b) {
  if (b < 0x80) return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

// Length of the well-formed prefix of the sequence at s[i] (at least 1 when
// the lead byte can start a sequence), and whether the whole sequence is there.
struct Scan {
  size_t valid;   // bytes that are a valid prefix of one character
  bool complete;  // the character is complete
  bool truncated; // the text ended while the prefix was still valid
};

Scan scan(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  const Lead l = lead_of(b0);
  if (l.len == 0) return {0, false, false};
  if (l.len == 1) return {1, true, false};
  size_t k = 1;
  for (; k < static_cast<size_t>(l.len); ++k) {
    if (i + k >= s.size()) return {k, false, true};
    const auto b = static_cast<unsigned char>(s[i + k]);
    const unsigned char lo = k == 1 ? l.lo : 0x80, hi = k == 1 ? l.hi : 0xBF;
    if (b < lo || b > hi) return {k, false, false};
  }
  return {k, true, false};
}

}  // namespace

size_t find_invalid_utf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    // ASCII runs dominate real text; skip them eight bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      __builtin_memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const Scan sc = scan(s, i);
    if (!sc.complete) return i;
    i += sc.valid;
  }
  return kValidUtf8;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t append_lossy_utf8(std::string_view bytes, bool final, std::string& out) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  size_t i = 0;
  const size_t n = bytes.size();
  while (i < n) {
    const Scan sc = scan(bytes, i);
    if (sc.complete) {
      out.append(bytes.data() + i, sc.valid);
      i += sc.valid;
    } else if (sc.truncated && !final) {
      break;
    } else {
      out.append(kReplacement);
      i += sc.valid == 0 ? 1 : sc.valid;
    }
  }
  return i;
}

}  // namespace mstar

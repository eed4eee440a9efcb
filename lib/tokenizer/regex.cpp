#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "core/errors.h"

namespace mstar::tok {
namespace {

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ascii_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// General categories: the same sets in both engines (up to the Unicode
// version each was built with). Script names are not here on purpose: PCRE2
// 10.40+ reads \p{Han} as Script_Extensions, Oniguruma as Script.
bool is_general_category(std::string_view n) {
  static constexpr std::string_view kNames[] = {
      "L",  "Lu", "Ll", "Lt", "Lm", "Lo", "M",  "Mn", "Mc", "Me", "N",  "Nd", "Nl", "No", "P",  "Pc", "Pd", "Ps",
      "Pe", "Pi", "Pf", "Po", "S",  "Sm", "Sc", "Sk", "So", "Z",  "Zs", "Zl", "Zp", "C",  "Cc", "Cf", "Co", "Cn"};
  return std::find(std::begin(kNames), std::end(kNames), n) != std::end(kNames);
}

class Translator {
 public:
  Translator(std::string_view p, const JsonAt& where) : p_(p), where_(where) {}

  std::string run() {
    while (i_ < p_.size()) {
      const char c = p_[i_];
      switch (c) {
        case '\\': escape(false); break;
        case '[': char_class(); break;
        case '(': open_group(); break;
        case ')':
          if (groups_.empty()) refuse(i_, ")", "closes no group");
          ci_ = groups_.back();
          groups_.pop_back();
          out_ += ')';
          ++i_;
          literal_reset();
          break;
        case '{': brace(); break;
        case '}':
          out_ += "\\}";
          ++i_;
          literal_reset();
          break;
        case '.':
        case '^':
        case '$':
          refuse(i_, std::string(1, c), "its line and newline rules differ between Oniguruma and PCRE2");
        case '|':
        case '*':
        case '+':
        case '?':
          out_ += c;
          ++i_;
          literal_reset();
          break;
        default: literal(); break;
      }
    }
    if (!groups_.empty()) refuse(p_.size(), "end of pattern", "a group is left open");
    return out_;
  }

 private:
  [[noreturn]] void refuse(size_t at, std::string_view what, std::string_view why) const {
    where_.fail(fmt::format("pattern {}: '{}' at byte {} is not supported: {}", where_.shown(), what, at, why));
  }

  void literal_reset() { prev_letter_ = 0; }

  // One literal character (all of its UTF-8 bytes). Inside (?i:...) only
  // ASCII is allowed, and never a pair that some character case-folds to
  // (Oniguruma matches "ss" against U+00DF, PCRE2 does not).
  void literal() {
    const auto b = static_cast<unsigned char>(p_[i_]);
    size_t len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    len = std::min(len, p_.size() - i_);
    if (ci_) {
      if (b >= 0x80) refuse(i_, p_.substr(i_, len), "non-ASCII literals fold differently inside (?i:...)");
      const char lower = static_cast<char>(b >= 'A' && b <= 'Z' ? b + 32 : b);
      if (prev_letter_) {
        const std::string pair{prev_letter_, lower};
        if (pair == "ss" || pair == "ff" || pair == "fi" || pair == "fl" || pair == "st")
          refuse(i_ - 1, p_.substr(i_ - 1, 2), "Oniguruma folds a single character to this pair inside (?i:...)");
      }
      prev_letter_ = (lower >= 'a' && lower <= 'z') ? lower : 0;
    }
    // Outside extended mode every character the switch above lets through
    // (']' included) is a literal in PCRE2 too.
    out_.append(p_.substr(i_, len));
    i_ += len;
  }

  // \X, inside or outside a class.
  void escape(bool in_class) {
    const size_t at = i_;
    if (i_ + 1 >= p_.size()) refuse(at, "\\", "the pattern ends in a backslash");
    const char c = p_[i_ + 1];
    if (ci_ && is_ascii_alnum(c)) refuse(at, p_.substr(at, 2), "escapes inside (?i:...) may fold differently");
    i_ += 2;
    literal_reset();
    switch (c) {
      case 's': out_ += "\\p{White_Space}"; return;
      case 'S': out_ += "\\P{White_Space}"; return;
      case 'd': out_ += "\\p{Nd}"; return;
      case 'D': out_ += "\\P{Nd}"; return;
      case 'r': out_ += "\\r"; return;
      case 'n': out_ += "\\n"; return;
      case 't': out_ += "\\t"; return;
      case 'f': out_ += "\\f"; return;
      case 'v': out_ += "\\x{0B}"; return;
      case 'a': out_ += "\\x{07}"; return;
      case 'e': out_ += "\\x{1B}"; return;
      case 'p':
      case 'P': {
        if (i_ >= p_.size() || p_[i_] != '{') refuse(at, p_.substr(at, 2), "only the braced form \\p{...} is supported");
        const size_t close = p_.find('}', i_);
        if (close == std::string_view::npos) refuse(at, p_.substr(at), "unterminated property");
        std::string_view name = p_.substr(i_ + 1, close - i_ - 1);
        bool negate = c == 'P';
        if (!name.empty() && name.front() == '^') {
          negate = !negate;
          name.remove_prefix(1);
        }
        if (!is_general_category(name))
          refuse(at, p_.substr(at, close + 1 - at), "only general categories (L, Lu, N, Nd, P, S, Z, ...) are supported");
        out_ += fmt::format("\\{}{{{}}}", negate ? 'P' : 'p', name);
        i_ = close + 1;
        return;
      }
      case 'x': {
        if (i_ < p_.size() && p_[i_] == '{') {
          const size_t close = p_.find('}', i_);
          if (close == std::string_view::npos) refuse(at, p_.substr(at), "unterminated \\x{...}");
          for (size_t k = i_ + 1; k < close; ++k)
            if (!is_hex(p_[k])) refuse(at, p_.substr(at, close + 1 - at), "not a hexadecimal code point");
          out_ += "\\x";
          out_.append(p_.substr(i_, close + 1 - i_));
          i_ = close + 1;
          return;
        }
        size_t k = i_;
        while (k < p_.size() && k < i_ + 2 && is_hex(p_[k])) ++k;
        if (k == i_) refuse(at, "\\x", "expected hexadecimal digits");
        out_ += fmt::format("\\x{{{}}}", p_.substr(i_, k - i_));
        i_ = k;
        return;
      }
      case 'u': {
        if (i_ + 4 > p_.size() || !std::all_of(p_.begin() + i_, p_.begin() + i_ + 4, is_hex))
          refuse(at, p_.substr(at, 2), "expected four hexadecimal digits");
        out_ += fmt::format("\\x{{{}}}", p_.substr(i_, 4));
        i_ += 4;
        return;
      }
      default: break;
    }
    if (is_ascii_alnum(c)) {
      refuse(at, p_.substr(at, 2),
             in_class ? "this escape is not supported inside a class"
                      : "this escape is not supported (\\w, \\b, \\h, anchors and back-references mean different "
                        "things in Oniguruma and PCRE2)");
    }
    // Escaped punctuation or a non-ASCII character: a literal in both.
    const auto b = static_cast<unsigned char>(c);
    size_t len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    len = std::min(len, p_.size() - (i_ - 1));
    out_ += '\\';
    out_.append(p_.substr(i_ - 1, len));
    i_ += len - 1;
  }

  void char_class() {
    const size_t at = i_;
    if (ci_) refuse(at, "[", "classes inside (?i:...) fold differently in the two engines");
    literal_reset();
    out_ += '[';
    ++i_;
    if (i_ < p_.size() && p_[i_] == '^') {
      out_ += '^';
      ++i_;
    }
    bool first = true;
    while (true) {
      if (i_ >= p_.size()) refuse(at, "[", "unterminated class");
      const char c = p_[i_];
      if (c == ']' && !first) break;
      if (c == ']') {
        out_ += "\\]";
        ++i_;
      } else if (c == '\\') {
        escape(true);
      } else if (c == '[') {
        refuse(i_, "[", "nested classes and POSIX brackets are not supported");
      } else if (c == '&' && i_ + 1 < p_.size() && p_[i_ + 1] == '&') {
        refuse(i_, "&&", "class intersection is Oniguruma-only");
      } else {
        out_ += c;
        ++i_;
      }
      first = false;
    }
    out_ += ']';
    ++i_;
  }

  void open_group() {
    const size_t at = i_;
    static constexpr std::string_view kKept[] = {"(?:", "(?=", "(?!", "(?<=", "(?<!", "(?>"};
    literal_reset();
    std::string_view rest = p_.substr(i_);
    if (rest.substr(0, 4) == "(?i:") {
      groups_.push_back(ci_);
      ci_ = true;
      out_ += "(?i:";
      i_ += 4;
      return;
    }
    for (auto k : kKept) {
      if (rest.substr(0, k.size()) == k) {
        groups_.push_back(ci_);
        out_ += k;
        i_ += k.size();
        return;
      }
    }
    if (rest.size() >= 2 && rest[1] == '?') {
      size_t end = std::min(p_.size(), i_ + 4);
      refuse(at, p_.substr(at, end - at), "only (?:, (?i:, (?=, (?!, (?<=, (?<! and (?> groups are supported");
    }
    groups_.push_back(ci_);
    out_ += '(';
    ++i_;
  }

  // {n}, {n,}, {n,m}, {,m}; anything else is a literal brace in both engines.
  void brace() {
    const size_t at = i_;
    literal_reset();
    size_t k = i_ + 1;
    const size_t lo_begin = k;
    while (k < p_.size() && is_digit(p_[k])) ++k;
    const bool has_lo = k > lo_begin;
    bool has_comma = false, has_hi = false;
    if (k < p_.size() && p_[k] == ',') {
      has_comma = true;
      const size_t hi_begin = ++k;
      while (k < p_.size() && is_digit(p_[k])) ++k;
      has_hi = k > hi_begin;
    }
    const bool valid = k < p_.size() && p_[k] == '}' && (has_lo || (has_comma && has_hi));
    if (!valid) {
      out_ += "\\{";
      ++i_;
      return;
    }
    std::string_view body = p_.substr(i_ + 1, k - i_ - 1);
    out_ += '{';
    if (!has_lo) out_ += '0';
    out_.append(body);
    out_ += '}';
    i_ = k + 1;
    if (i_ < p_.size() && p_[i_] == '+')
      refuse(at, p_.substr(at, i_ + 1 - at), "Oniguruma repeats the interval, PCRE2 makes it possessive");
  }

  std::string_view p_;
  const JsonAt& where_;
  size_t i_ = 0;
  std::string out_;
  std::vector<bool> groups_;  // the case-insensitivity outside each open group
  bool ci_ = false;
  char prev_letter_ = 0;
};

}  // namespace

struct Regex::Compiled {
  std::string pattern;
  pcre2_code* code = nullptr;
  pcre2_match_context* mctx = nullptr;
  bool jit = false;
  ~Compiled() {
    if (mctx) pcre2_match_context_free(mctx);
    if (code) pcre2_code_free(code);
  }
};

std::string oniguruma_to_pcre2(std::string_view pattern, const JsonAt& where) {
  return Translator(pattern, where).run();
}

std::unique_ptr<Regex::Compiled> Regex::compile(std::string pcre, const JsonAt& where) {
  auto c = std::make_unique<Regex::Compiled>();
  c->pattern = std::move(pcre);
  pcre2_compile_context* cctx = pcre2_compile_context_create(nullptr);
  // '\n' alone ends a line, as in Oniguruma.
  pcre2_set_newline(cctx, PCRE2_NEWLINE_LF);
  int err = 0;
  PCRE2_SIZE off = 0;
  c->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(c->pattern.data()), c->pattern.size(), PCRE2_UTF | PCRE2_UCP,
                          &err, &off, cctx);
  pcre2_compile_context_free(cctx);
  if (!c->code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    where.fail(fmt::format("pattern {} does not compile (as PCRE2 {}): {} at byte {}", where.shown(), c->pattern,
                           reinterpret_cast<const char*>(msg), off));
  }
  c->jit = pcre2_jit_compile(c->code, PCRE2_JIT_COMPLETE) == 0;
  c->mctx = pcre2_match_context_create(nullptr);
  // One match call may scan a whole run of spaces or letters; the default
  // limit (10 million steps) would fail on long but valid inputs.
  pcre2_set_match_limit(c->mctx, UINT32_MAX);
  return c;
}

Regex::Regex(std::unique_ptr<Compiled> c) : c_(std::move(c)) {}
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;
Regex::~Regex() = default;

Regex Regex::oniguruma(std::string_view pattern, const JsonAt& where) {
  return Regex(compile(oniguruma_to_pcre2(pattern, where), where));
}

Regex Regex::literal(std::string_view text, const JsonAt& where) {
  if (text.empty()) where.fail("an empty split string is not supported");
  std::string p;
  for (char ch : text) {
    if (static_cast<unsigned char>(ch) < 0x80 && !is_ascii_alnum(ch)) p += '\\';
    p += ch;
  }
  return Regex(compile(std::move(p), where));
}

const std::string& Regex::pcre2_pattern() const { return c_->pattern; }

void Regex::find_all(std::string_view text, std::vector<Span>& out) const {
  struct Resources {
    pcre2_match_data* md = nullptr;
    pcre2_match_context* big_ctx = nullptr;
    pcre2_jit_stack* stack = nullptr;
    ~Resources() {
      if (md) pcre2_match_data_free(md);
      if (big_ctx) pcre2_match_context_free(big_ctx);
      if (stack) pcre2_jit_stack_free(stack);
    }
  } r;
  r.md = pcre2_match_data_create_from_pattern(c_->code, nullptr);
  pcre2_match_context* ctx = c_->mctx;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  bool have_last = false;
  size_t last_end = 0;
  while (start <= text.size()) {
    // The text was validated once up front; PCRE2 would otherwise re-check
    // the whole subject on every call.
    int rc = pcre2_match(c_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, r.md, ctx);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !r.stack) {
      r.stack = pcre2_jit_stack_create(64 * 1024, 256 * 1024 * 1024, nullptr);
      r.big_ctx = pcre2_match_context_copy(c_->mctx);
      if (!r.stack || !r.big_ctx) throw std::bad_alloc();
      pcre2_jit_stack_assign(r.big_ctx, nullptr, r.stack);
      ctx = r.big_ctx;
      continue;
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw InputError(fmt::format("pre-tokenizer pattern {} failed on the text from byte {}: {}", c_->pattern, start,
                                   reinterpret_cast<const char*>(msg)));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(r.md);
    const size_t s = ov[0], e = ov[1];
    if (s == e && have_last && last_end == e) {
      if (start >= text.size()) break;
      const auto b = static_cast<unsigned char>(text[start]);
      start += b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
      continue;
    }
    out.push_back({s, e});
    start = e;
    have_last = true;
    last_end = e;
  }
}

}  // namespace mstar::tok

#pragma once
// Patterns from tokenizer.json, written for Oniguruma (the engine the
// reference `tokenizers` library compiles them with), run by PCRE2 in UTF and
// UCP mode, JIT-compiled when the library has a JIT.
//
// The two engines read some constructs differently; the translation rewrites
// those whose Oniguruma meaning PCRE2 can express and refuses the rest:
//  - \s, \S: Oniguruma's is the White_Space property; PCRE2's UCP \s also
//    takes U+180E, so they become \p{White_Space} / \P{White_Space}.
//  - \d, \D: Nd in both, written out as \p{Nd} / \P{Nd}.
//  - \v is a vertical-tab character in Oniguruma and a class in PCRE2;
//    \uHHHH and {,n} are Oniguruma-only spellings.
//  - X{n,m}+ repeats the interval in Oniguruma and is possessive in PCRE2;
//    \w, \b, \h, ., ^, $, script properties, nested classes and anything
//    unusual inside (?i:...) differ or may differ: refused.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/json_at.h"

namespace mstar::tok {

struct Span {
  size_t begin, end;
};

class Regex {
 public:
  // `where` is the JSON value holding the pattern; errors name it.
  static Regex oniguruma(std::string_view pattern, const JsonAt& where);
  // Matches `text` literally (a Split pattern given as {"String": ...}).
  static Regex literal(std::string_view text, const JsonAt& where);

  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;
  ~Regex();

  // Appends the successive matches in `text` (well-formed UTF-8) the way the
  // reference iterates them: leftmost-first, each search resuming at the end
  // of the previous match, an empty match right at that end skipped.
  void find_all(std::string_view text, std::vector<Span>& out) const;

  // The pattern as handed to PCRE2.
  const std::string& pcre2_pattern() const;

 private:
  struct Compiled;
  explicit Regex(std::unique_ptr<Compiled> c);
  static std::unique_ptr<Compiled> compile(std::string pcre, const JsonAt& where);
  std::unique_ptr<Compiled> c_;
};

// The PCRE2 spelling of an Oniguruma pattern; throws ConfigError naming
// `where`, the construct and its byte offset when it cannot be carried over.
std::string oniguruma_to_pcre2(std::string_view pattern, const JsonAt& where);

}  // namespace mstar::tok

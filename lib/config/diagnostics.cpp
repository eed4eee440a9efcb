#include "config/diagnostics.h"

#include <algorithm>

#include <fmt/format.h>

namespace mstar {

std::string Diagnostic::str() const {
  if (line > 0) return fmt::format("{}:{}:{}: error: {}", file, line, column, message);
  return fmt::format("{}: error: {}", file, message);
}

void Diagnostics::error(std::string file, int64_t line, int64_t column, std::string message) {
  list_.push_back(Diagnostic{std::move(file), line, column, std::move(message)});
}

std::string Diagnostics::str() const {
  std::string out;
  for (const auto& d : list_) out += d.str() + "\n";
  return out;
}

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  // About one edit in three letters, at least one: "fp8" is no typo of
  // "f32" (two edits in three letters), "refernce" is one of "reference".
  size_t best_d = std::max<size_t>(1, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

}  // namespace mstar

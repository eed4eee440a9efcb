#pragma once
// Problems found in configuration files, all of them, each with its place:
// "file:line:column: error: message" (compiler style, so editors jump to it).
#include <cstdint>
#include <string>
#include <vector>

namespace mstar {

struct Diagnostic {
  std::string file;
  int64_t line = 0;    // 1-based; 0 when the place has no line (a --set value)
  int64_t column = 0;  // 1-based
  std::string message;
  std::string str() const;
};

class Diagnostics {
 public:
  void error(std::string file, int64_t line, int64_t column, std::string message);
  bool ok() const { return list_.empty(); }
  const std::vector<Diagnostic>& all() const { return list_; }
  std::string str() const;  // one per line

 private:
  std::vector<Diagnostic> list_;
};

// The closest of `candidates` to `word` when it is close enough to be a
// likely typo (edits up to a third of its letters, at least one), else "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace mstar

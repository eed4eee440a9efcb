#include "tokenizer/throughput.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace mstar {

EncodeThroughput measure_encode(const Tokenizer& tokenizer, const std::string& text, int passes,
                                bool add_special_tokens) {
  EncodeThroughput r;
  r.bytes = text.size();
  r.tokens = tokenizer.encode(text, add_special_tokens).size();
  std::vector<double> secs;
  for (int p = 0; p < passes; ++p) {
    const auto t0 = std::chrono::steady_clock::now();
    r.tokens = tokenizer.encode(text, add_special_tokens).size();
    secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(secs.begin(), secs.end());
  r.median_s = secs.empty() ? 0.0 : secs[secs.size() / 2];
  return r;
}

}  // namespace mstar

#pragma once
// Encode throughput: what mstar-tokenize --bench and mstar-bench tokenize
// report (docs/tokenizer.md records it beside the JavaScript reference).
#include <cstddef>
#include <string>

#include "tokenizer/tokenizer.h"

namespace mstar {

struct EncodeThroughput {
  std::size_t bytes = 0, tokens = 0;
  double median_s = 0;  // one pass over the text, median of the passes
  double mb_per_s() const { return median_s > 0 ? static_cast<double>(bytes) / 1e6 / median_s : 0.0; }
};

// Encodes `text` once untimed (warming the word cache, as a long-running
// process would be), then `passes` timed passes, single thread.
EncodeThroughput measure_encode(const Tokenizer& tokenizer, const std::string& text, int passes, bool add_special_tokens);

}  // namespace mstar

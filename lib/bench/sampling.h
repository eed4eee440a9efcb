#pragma once
// Turning one step's logits into a token, at a vocabulary's size: the host
// work every stream does every step, beside the step it must not slow.
#include <cstdint>
#include <string>
#include <vector>

namespace mstar::bench {

struct SamplingResult {
  std::string setting;  // greedy | top_k=50,top_p=0.95 | ...
  int64_t vocab = 0;
  double median_us = 0, max_us = 0;
};

std::vector<SamplingResult> bench_sampling(int64_t vocab, int repeats);

}  // namespace mstar::bench

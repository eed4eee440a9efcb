#include "bench/sampling.h"

#include <fmt/format.h>

#include "bench/timing.h"
#include "models/sampling.h"

namespace mstar::bench {

std::vector<SamplingResult> bench_sampling(int64_t vocab, int repeats) {
  std::mt19937_64 g(5);
  std::normal_distribution<float> n(0.0f, 3.0f);
  std::vector<float> logits(static_cast<size_t>(vocab));
  for (auto& l : logits) l = n(g);
  std::vector<SamplingResult> out;
  for (const SamplingParams& sp : {SamplingParams{0.0, 0, 1.0, 1}, SamplingParams{0.8, 50, 0.95, 1},
                                   SamplingParams{0.8, 0, 0.95, 1}, SamplingParams{0.8, 0, 1.0, 1}}) {
    Sampler s(sp);
    const std::vector<double> us =
        time_calls(Backend::cpu, [](int) {}, [&](int) { (void)s.sample(logits); }, repeats);
    const std::string setting = sp.temperature == 0.0 ? "greedy"
                                                      : fmt::format("temperature={},top_k={},top_p={}", sp.temperature,
                                                                    sp.top_k, sp.top_p);
    out.push_back({setting, vocab, us[us.size() / 2], us.back()});
  }
  return out;
}

}  // namespace mstar::bench

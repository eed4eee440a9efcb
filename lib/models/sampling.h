#pragma once
// Turning logits into a token: greedy, or temperature with top-k and top-p,
// drawn from a generator seeded per request so a run is reproducible.
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace mstar {

struct SamplingParams {
  double temperature = 0.0;  // 0: greedy
  int64_t top_k = 0;         // 0: no limit
  double top_p = 1.0;        // nucleus mass, (0, 1]
  uint64_t seed = 0;

  // Throws InputError "<where>: <field> ..." for a nonsense value.
  void validate(const std::string& where) const;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& p) : p_(p), gen_(p.seed) {}
  int32_t sample(std::span<const float> logits);
  const SamplingParams& params() const { return p_; }

  // The generator's state as text (the standard's operator<< of the engine),
  // so a stream saved mid-way draws the same numbers when it resumes; and
  // back, throwing InputError when the text is not such a state.
  std::string state() const;
  void set_state(const std::string& text);

 private:
  // The draws sample() picks between, once the logits are ordered (no NaN,
  // no +infinity), `mx` their largest and `inv_t` the temperature's inverse,
  // finite. Each returns the token drawn. Greedy, and the low temperatures
  // that draw what greedy draws, are sample()'s own: the first of the largest.
  // top_k truncates (`keep` tokens), then top_p of their mass.
  int32_t draw_top_k(std::span<const float> logits, float mx, float inv_t, size_t keep);
  // top_p of the whole vocabulary's mass `all`, every logit weighed already.
  int32_t draw_top_p(std::span<const float> logits, float mx, float inv_t, double all);
  // By weights_ as they stand, over `n` tokens: untruncated, or top_p's nucleus.
  int32_t draw_weighted(size_t n);

  SamplingParams p_;
  std::mt19937_64 gen_;
  std::vector<float> finite_;                      // [vocab] the logits, made ordered, when some are not finite
  std::vector<float> weights_;                     // [vocab]
  std::vector<std::pair<float, int32_t>> scratch_;  // candidates: (logit, id)
  std::vector<int32_t> ids_;                        // [vocab] ids at or above a top_k floor, or top_p candidates
  std::vector<float> candidate_logits_;             // [candidates] their logits (top_p)
  std::vector<uint16_t> bucket_of_;                 // [candidates] bucket of each (top_p)
  std::vector<int32_t> in_bucket_;                  // [candidates] those in the boundary's bucket (top_p)
  std::vector<double> bucket_mass_;                 // [4, 4096] mass per bucket, candidates j % 4 apart
  std::vector<double> block_mass_;                  // [vocab / 1024, rounded up] kept mass per block of ids
};

}  // namespace mstar

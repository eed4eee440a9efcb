#include "models/sampling.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "core/errors.h"

namespace mstar {

void SamplingParams::validate(const std::string& where) const {
  if (!std::isfinite(temperature) || temperature < 0 || temperature > 100)
    throw InputError(fmt::format("{}: temperature must be in [0, 100], got {}", where, temperature));
  if (top_k < 0) throw InputError(fmt::format("{}: top_k must not be negative, got {}", where, top_k));
  if (!std::isfinite(top_p) || top_p <= 0 || top_p > 1)
    throw InputError(fmt::format("{}: top_p must be in (0, 1], got {}", where, top_p));
}

std::string Sampler::state() const {
  std::ostringstream out;
  out << gen_;
  return out.str();
}

void Sampler::set_state(const std::string& text) {
  std::istringstream in(text);
  std::mt19937_64 g;
  in >> g;
  // The state is 312 words and an index; anything left over, or missing, is not one.
  if (in.fail() || !(in >> std::ws).eof())
    throw InputError("sampler state: not the text of a mt19937_64 state (312 words and an index)");
  gen_ = g;
}

int32_t Sampler::sample(std::span<const float> logits) {
  MSTAR_ASSERT(!logits.empty(), "sample: no logits");
  if (p_.temperature == 0.0)
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  scratch_.clear();
  for (size_t i = 0; i < logits.size(); ++i) scratch_.emplace_back(logits[i], static_cast<int32_t>(i));
  // Highest first; ties by index, so the order (and the draw) is deterministic.
  // With top_k only the first k need ordering.
  const auto higher = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  size_t keep = scratch_.size();
  if (p_.top_k > 0) keep = std::min(keep, static_cast<size_t>(p_.top_k));
  std::partial_sort(scratch_.begin(), scratch_.begin() + static_cast<long>(keep), scratch_.end(), higher);
  const double mx = scratch_[0].first;
  std::vector<double> prob(keep);
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += prob[i] = std::exp((scratch_[i].first - mx) / p_.temperature);
  double mass = 0;
  size_t nucleus = keep;
  for (size_t i = 0; i < keep; ++i) {
    mass += prob[i] / total;
    if (mass >= p_.top_p) {
      nucleus = i + 1;
      break;
    }
  }
  double sub = 0;
  for (size_t i = 0; i < nucleus; ++i) sub += prob[i];
  double u = std::uniform_real_distribution<double>(0.0, sub)(gen_);
  for (size_t i = 0; i < nucleus; ++i) {
    if (u < prob[i]) return scratch_[i].second;
    u -= prob[i];
  }
  return scratch_[nucleus - 1].second;
}

}  // namespace mstar

#include "models/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "core/errors.h"
#include "kernels/ops.h"

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

namespace {

// The definition's order: higher logit first, ties by lower id. A lambda,
// so each sort inlines it: passed as a function pointer, each comparison
// was a call.
constexpr auto before = [](std::pair<float, int32_t> a, std::pair<float, int32_t> b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
};

// Buckets of z = (max - logit) / temperature over [0, range], range at most
// kZRange; anything beyond kZRange (weight under 5e-18 of the top token's)
// shares the last bucket.
constexpr int kBuckets = 4096;
constexpr float kZRange = 40.0f;
// Histograms the bucket masses are added into, side by side.
constexpr size_t kLanes = 4;
// Ids per block of the draw's walk.
constexpr size_t kWalkBlock = 1024;

// A candidate: (logit, id).
using Token = std::pair<float, int32_t>;

// The nucleus's boundary: the first of `sorted` (in the order `before`
// sorts by) whose weights, added one by one to `mass`, reach `need`; the
// last of them when rounding leaves the sum short; `none` when there are
// none.
Token prefix_reaching(std::span<const Token> sorted, const float* weights, double mass, double need, Token none) {
  for (size_t i = 0; i < sorted.size(); ++i)
    if ((mass += static_cast<double>(weights[static_cast<size_t>(sorted[i].second)])) >= need || i + 1 == sorted.size())
      return sorted[i];
  return none;
}

}  // namespace

// The draw's distribution is the definition's (sort the vocabulary, keep
// top_k, then the smallest prefix whose mass reaches top_p), found without
// sorting the vocabulary: the nucleus is every token up to a boundary token
// in that order, and the boundary is found by selection (top_k, draw_top_k)
// or by bucketing the mass (top_p, draw_top_p), sorting only a bucket. The
// draw then walks the nucleus in id order. The exps are f32, taken once: for
// the whole vocabulary with the cpu backend's vector exp, or for the top_k
// tokens alone when top_k truncates (weights outside the nucleus are never
// read). `mstar-bench sample` times each setting at a 151,936-entry
// vocabulary.
int32_t Sampler::sample(std::span<const float> given) {
  MSTAR_ASSERT(!given.empty(), "sample: no logits");
  const size_t n = given.size();
  std::span<const float> logits = given;
  kernels::MaxFound top = kernels::max_host({static_cast<int64_t>(n), logits.data()});
  if (!top.finite) {
    // Non-finite logits (a model whose numbers overflowed) are drawn as if
    // NaN were -infinity and +infinity the largest float, so a NaN is never
    // drawn and everything below (the floor search, the buckets, the order
    // `before` sorts by) sees ordered values only.
    finite_.assign(given.begin(), given.end());
    for (float& l : finite_)
      if (std::isnan(l)) l = -INFINITY;
      else if (l == INFINITY) l = std::numeric_limits<float>::max();
    logits = finite_;
    top = kernels::max_host({static_cast<int64_t>(n), logits.data()});
  }
  // Greedy, or nothing above -infinity to weigh, or a temperature whose
  // inverse a float cannot hold (below about 2.9e-39; the top token's weight
  // would be 0 * infinity, NaN): the first of the largest. From here on 2 *
  // temperature is above 0 as a float, so the top_k floor search ends.
  const float inv_t = p_.temperature == 0.0 ? INFINITY : static_cast<float>(1.0 / p_.temperature);
  if (!std::isfinite(inv_t) || top.value == -INFINITY) return static_cast<int32_t>(top.index);
  const float mx = top.value;
  weights_.resize(n);  // [n] exp((logit - max) / temperature), where read
  const size_t keep = p_.top_k > 0 ? std::min(n, static_cast<size_t>(p_.top_k)) : n;
  if (keep < n) return draw_top_k(logits, mx, inv_t, keep);
  // No top_k truncation: every logit weighed, and their mass.
  const double all = kernels::exp_scaled_host({static_cast<int64_t>(n), logits.data(), mx, inv_t, weights_.data()});
  if (p_.top_p < 1.0) return draw_top_p(logits, mx, inv_t, all);
  return draw_weighted(n);  // untruncated
}

// The top_k tokens, then the smallest prefix of them whose mass reaches
// top_p of theirs: the logits at or above a floor lowered until there are k,
// only those weighed.
int32_t Sampler::draw_top_k(std::span<const float> logits, float mx, float inv_t, size_t keep) {
  const size_t n = logits.size();
  const auto w_of = [&](const Token& t) { return static_cast<double>(weights_[static_cast<size_t>(t.second)]); };
  ids_.resize(n);  // [n] the ids at or above the floor, in order
  const auto at_least = [&](float floor) {
    return static_cast<size_t>(kernels::at_least_host({static_cast<int64_t>(n), logits.data(), floor, ids_.data()}));
  };
  size_t found = 0;
  for (float gap = 2.0f * static_cast<float>(p_.temperature); (found = at_least(mx - gap)) < keep;) gap *= 4.0f;
  scratch_.clear();
  for (size_t i = 0; i < found; ++i) scratch_.emplace_back(logits[static_cast<size_t>(ids_[i])], ids_[i]);
  std::partial_sort(scratch_.begin(), scratch_.begin() + static_cast<long>(keep), scratch_.end(), before);
  for (size_t i = 0; i < keep; ++i) {
    const auto id = static_cast<size_t>(scratch_[i].second);
    weights_[id] = std::exp((logits[id] - mx) * inv_t);
  }
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += w_of(scratch_[i]);
  const Token last = prefix_reaching({scratch_.data(), keep}, weights_.data(), 0.0, p_.top_p * total,
                                     {-INFINITY, static_cast<int32_t>(n)});
  // At most top_k tokens: the draw walks them alone, in id order.
  scratch_.erase(std::find(scratch_.begin(), scratch_.begin() + static_cast<long>(keep), last) + 1, scratch_.end());
  std::sort(scratch_.begin(), scratch_.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  double sub = 0;
  for (const auto& t : scratch_) sub += w_of(t);
  double u = std::uniform_real_distribution<double>(0.0, sub)(gen_);
  int32_t pick = scratch_.front().second;
  for (const auto& t : scratch_) {
    if (w_of(t) <= 0) continue;  // never drawn, not even when rounding runs past the end
    pick = t.second;
    if (u < w_of(t)) break;
    u -= w_of(t);
  }
  return pick;
}

// The smallest prefix of the whole vocabulary whose mass reaches top_p of
// `all` (every logit weighed already): the weights outside it zeroed, then
// drawn as they stand.
int32_t Sampler::draw_top_p(std::span<const float> logits, float mx, float inv_t, double all) {
  const size_t n = logits.size();
  // Mass per bucket of z; the bucket where the mass from the top reaches
  // top_p holds the boundary, found by sorting that bucket alone.
  //
  // Only logits with z up to `range` can hold it: together the rest weigh
  // under n e^-range (the top token weighs 1), which for range = ln(n /
  // ((1 - top_p) all)) + 1 is less than the (1 - top_p) all the nucleus
  // leaves out. Those candidates (selected by vector compares) alone are
  // bucketed, over [0, range]: finer buckets where the logits lie close.
  // When the bound passes kZRange every logit is a candidate and anything
  // beyond kZRange shares the last bucket. The masses are added into
  // kLanes histograms, candidate j into j % kLanes: into one histogram
  // every add waited for the one before whenever neighbours shared a
  // bucket. On Zen 4 a 151,936-entry draw at temperature 0.8, top_p 0.95
  // (`mstar-bench sample`: logits drawn from N(0, 3), 22% of them
  // candidates) took 134 µs against 166 with every logit bucketed over
  // [0, 40] by vector ops and 214 by this file's own loops (compiled for
  // the baseline instruction set); with logits from N(0, 0.01) (the bench's
  // spread edited), 290 against 733 (medians of 5 alternated runs of
  // `mstar-bench sample`; docs/PERFORMANCE.md, "Today's figures").
  const double bound = std::log(static_cast<double>(n) / ((1.0 - p_.top_p) * all)) + 1.0;
  const float range = bound < kZRange ? static_cast<float>(bound) : kZRange;
  const float floor = bound < kZRange ? mx - range / inv_t : -INFINITY;
  ids_.resize(n);  // [n] the candidates' ids, in order
  const auto candidates = static_cast<size_t>(
      kernels::at_least_host({static_cast<int64_t>(n), logits.data(), floor, ids_.data()}));
  candidate_logits_.resize(candidates);  // [candidates]
  for (size_t j = 0; j < candidates; ++j) candidate_logits_[j] = logits[static_cast<size_t>(ids_[j])];
  bucket_of_.resize(candidates);  // [candidates]
  kernels::buckets_host({static_cast<int64_t>(candidates), candidate_logits_.data(), mx,
                         inv_t * (kBuckets / range), static_cast<uint16_t>(kBuckets - 1), bucket_of_.data()});
  bucket_mass_.assign(kLanes * kBuckets, 0.0);
  const auto weight = [&](size_t j) { return weights_[static_cast<size_t>(ids_[j])]; };
  size_t j = 0;
  for (; j + kLanes <= candidates; j += kLanes)
    for (size_t l = 0; l < kLanes; ++l) bucket_mass_[l * kBuckets + bucket_of_[j + l]] += weight(j + l);
  for (; j < candidates; ++j) bucket_mass_[bucket_of_[j]] += weight(j);
  const auto mass = [&](int bk) {
    double m = 0;
    for (size_t l = 0; l < kLanes; ++l) m += bucket_mass_[l * kBuckets + static_cast<size_t>(bk)];
    return m;
  };
  const double need = p_.top_p * all;
  double above = 0;
  int b = 0;
  for (double m; b < kBuckets - 1 && above + (m = mass(b)) < need; ++b) above += m;
  in_bucket_.resize(candidates);  // [candidates] the candidates in bucket b, in order
  const auto found = static_cast<size_t>(kernels::equal_u16_host(
      {static_cast<int64_t>(candidates), bucket_of_.data(), static_cast<uint16_t>(b), in_bucket_.data()}));
  scratch_.clear();
  for (size_t k = 0; k < found; ++k) {
    const auto c = static_cast<size_t>(in_bucket_[k]);
    scratch_.emplace_back(candidate_logits_[c], ids_[c]);
  }
  std::sort(scratch_.begin(), scratch_.end(), before);
  const Token last = prefix_reaching(scratch_, weights_.data(), above, need, {-INFINITY, static_cast<int32_t>(n)});
  // Outside the nucleus the weights are zero from here on: the sums and
  // the walk of draw_weighted read them without testing each id (a branch
  // on ids in random order). The nucleus is every logit above the
  // boundary's, and those equal to it up to its id: at least it there, at
  // least the next float after it beyond. (An empty boundary bucket leaves
  // `last` at {-infinity, n}: nothing is zeroed.)
  const int64_t cut = std::min(static_cast<int64_t>(last.second) + 1, static_cast<int64_t>(n));
  kernels::zero_below_host({cut, logits.data(), last.first, weights_.data()});
  kernels::zero_below_host({static_cast<int64_t>(n) - cut, logits.data() + cut,
                            std::nextafter(last.first, INFINITY), weights_.data() + cut});
  return draw_weighted(n);
}

// Every token by its weight as it stands: the whole vocabulary untruncated,
// or the top_p nucleus (the rest weighs 0). The mass per block of
// kWalkBlock ids, so the draw skips whole blocks and walks one token at a
// time only inside the block it lands in. Walking every token (a chain of
// dependent double subtractions) took about 150 µs of a 151,936-entry draw.
int32_t Sampler::draw_weighted(size_t n) {
  const size_t blocks = (n + kWalkBlock - 1) / kWalkBlock;
  block_mass_.resize(blocks);
  kernels::block_sums_host(
      {static_cast<int64_t>(n), weights_.data(), static_cast<int64_t>(kWalkBlock), block_mass_.data()});
  double sub = 0;
  for (double m : block_mass_) sub += m;
  double u = std::uniform_real_distribution<double>(0.0, sub)(gen_);
  size_t b = 0;
  for (; b + 1 < blocks && u >= block_mass_[b]; ++b) u -= block_mass_[b];
  // From the block the draw lands in; the walk goes on past it if the
  // block's sum rounded above its tokens' running subtraction.
  size_t pick = n;
  const auto drawable = [&](size_t i) { return weights_[i] > 0; };
  for (size_t i = b * kWalkBlock; i < n; ++i)
    if (drawable(i)) {
      pick = i;
      if (u < weights_[i]) break;
      u -= weights_[i];
    }
  // Nothing drawable from there on (rounding again): the last before it.
  for (size_t i = b * kWalkBlock; pick == n && i-- > 0;)
    if (drawable(i)) pick = i;
  return static_cast<int32_t>(pick);
}

}  // namespace mstar

#include "resources/bounded_kv/config.h"

#include <algorithm>
#include <limits>

#include "core/check_ranges.h"
#include "core/checked.h"
#include "core/files.h"
#include "core/format_value.h"
#include "core/errors.h"
#include "resources/kv_dtype.h"

namespace mstar {

namespace {

// Slot offsets and read/write ranges travel to the kernels as int32.
constexpr int64_t kMaxSlotTokens = std::numeric_limits<int32_t>::max();

// a * L + b without overflow; nullopt when it does not fit.
std::optional<int64_t> checked_at(const SourceAffine& a, int64_t L) {
  int64_t prod = 0, sum = 0;
  if (__builtin_mul_overflow(a.per_source, L, &prod) || __builtin_add_overflow(prod, a.plus, &sum))
    return std::nullopt;
  return sum;
}

}  // namespace

std::string format_rule(const SourceAffine& a) {
  if (a.per_source == 0) return fmt::format("{}", a.plus);
  std::string s = a.per_source == 1 ? "source" : fmt::format("{}*source", a.per_source);
  if (a.plus > 0) s += fmt::format("+{}", a.plus);
  if (a.plus < 0) s += fmt::format("{}", a.plus);
  return s;
}

void BoundedKVConfig::validate(std::string_view where) const {
  check_ranges(*this, where);
  check_kv_dtype(dtype, where);
  if (max_source_len < min_source_len)
    throw ConfigError(fmt::format("{}: max_source_len {} is below min_source_len {}", where, max_source_len,
                                  min_source_len));

  // Retention at both ends of the allowed range: the rule is affine, so what
  // holds at the ends holds in between.
  const std::string rule = fmt::format("{}", retention);
  for (int64_t L : {min_source_len, max_source_len}) {
    auto s = checked_at(retention.sink, L);
    auto w = checked_at(retention.window, L);
    if (!s || !w)
      throw ConfigError(fmt::format("{}: retention {} overflows at source length {}", where, rule, L));
    if (*s < 0)
      throw ConfigError(fmt::format("{}: retention {} gives a negative sink ({}) at source length {}", where, rule,
                                    *s, L));
    if (*w < 0)
      throw ConfigError(fmt::format("{}: retention {} gives a negative window ({}) at source length {}", where,
                                    rule, *w, L));
  }
  if (max_source_len > min_source_len) {
    if (retention.sink.per_source < 0)
      throw ConfigError(fmt::format(
          "{}: retention {} shrinks as the source grows: sink {} at source length {} but {} at {}", where, rule,
          retention.sink.at(min_source_len), min_source_len, retention.sink.at(max_source_len), max_source_len));
    if (retention.window.per_source < 0)
      throw ConfigError(fmt::format(
          "{}: retention {} shrinks as the source grows: window {} at source length {} but {} at {}", where, rule,
          retention.window.at(min_source_len), min_source_len, retention.window.at(max_source_len),
          max_source_len));
  }
  // The slot must hold what the rule keeps for every allowed length, and its
  // offsets must fit the kernels' int32 table.
  // (The scratch at most doubles it, hence the half.)
  int64_t slot = 0;
  if (__builtin_add_overflow(sink_capacity(), window_capacity(), &slot) || slot > kMaxSlotTokens / 2)
    throw ConfigError(fmt::format(
        "{}: retention {} needs {} entries per slot (sink {} + window {}) at source lengths up to {}, more than a "
        "slot can address ({})",
        where, rule, slot, sink_capacity(), window_capacity(), max_source_len, kMaxSlotTokens / 2));
  slot = slot_tokens();
  // The pool's bytes, computed before anything is allocated: a size no
  // machine holds is refused here, naming it, not by the allocator.
  const auto per_slot = checked_product({num_layers, rows_per_request, num_heads, slot, 2, head_dim,
                                         static_cast<int64_t>(row_bytes(dtype, 1))});
  const auto pool = per_slot ? checked_product({static_cast<int64_t>(std::min<uint64_t>(*per_slot, INT64_MAX)), max_slots})
                             : std::nullopt;
  if (!pool || *pool > kMaxResourceBytes)
    throw ConfigError(fmt::format("{}: max_slots {} needs {} for the slot pool ({} per slot of {} entries), over the "
                                  "limit of {} for one resource",
                                  where, max_slots, pool ? bytes_text(*pool) : std::string("more than 2^64 bytes"),
                                  per_slot ? bytes_text(*per_slot) : std::string("more than 2^64 bytes"), slot,
                                  bytes_text(kMaxResourceBytes)));
}

SinkWindow BoundedKVConfig::retention_for(int64_t source_len) const {
  MSTAR_ASSERT(source_len >= min_source_len && source_len <= max_source_len,
               fmt::format("retention_for({}) outside [{}, {}]", source_len, min_source_len, max_source_len));
  return retention.at(source_len);
}

int64_t BoundedKVConfig::sink_capacity() const {
  int64_t cap = 0;
  for (int64_t L : {min_source_len, max_source_len}) cap = std::max(cap, retention.sink.at(L) - L);
  return cap;
}

int64_t BoundedKVConfig::window_capacity() const {
  return std::max<int64_t>({0, retention.window.at(min_source_len), retention.window.at(max_source_len)});
}

int64_t BoundedKVConfig::scratch_tokens() const {
  return query_window ? std::min(*query_window, retained_tokens()) : retained_tokens();
}

int64_t BoundedKVConfig::max_retained() const {
  int64_t m = 0;
  for (int64_t L : {min_source_len, max_source_len}) m = std::max(m, retention.sink.at(L) + retention.window.at(L));
  return m;
}

std::size_t BoundedKVConfig::slot_bytes_per_layer() const {
  return row_bytes(dtype, rows_per_request * num_heads * slot_tokens() * 2 * head_dim);
}

std::size_t BoundedKVConfig::pool_bytes() const {
  return slot_bytes_per_layer() * static_cast<std::size_t>(max_slots * num_layers);
}

}  // namespace mstar

fmt::format_context::iterator fmt::formatter<mstar::BoundedKVConfig>::format(const mstar::BoundedKVConfig& c,
                                                                            format_context& ctx) const {
  return fmt::formatter<std::string>::format(fmt::format("BoundedKVConfig{{{}}}", mstar::format_fields(c)), ctx);
}

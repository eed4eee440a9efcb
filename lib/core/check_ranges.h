#pragma once
// Checks every integer field of a config against its declared range; the
// first violation throws ConfigError "<where>: <key> must be ..., got <v>".
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

#include "core/fields.h"
#include "core/errors.h"

namespace mstar {

// "" when v is inside r, else what is wrong ("must be at least 1, got 0").
inline std::string range_problem(int64_t v, const Range& r) {
  if (v < r.min && r.max == std::numeric_limits<int64_t>::max())
    return fmt::format("must be at least {}, got {}", r.min, v);
  if (v < r.min || v > r.max) return fmt::format("must be in [{}, {}], got {}", r.min, r.max, v);
  return "";
}

template <class Config>
void check_ranges(const Config& c, std::string_view where) {
  for_each_field<Config>([&](const auto& d) {
    using V = typename std::decay_t<decltype(d)>::Value;
    std::optional<int64_t> v;
    if constexpr (std::is_same_v<V, int64_t>) v = c.*(d.member);
    if constexpr (std::is_same_v<V, std::optional<int64_t>>) v = c.*(d.member);
    if (!v) return;
    const std::string problem = range_problem(*v, d.range);
    if (!problem.empty()) throw ConfigError(fmt::format("{}: {} {}", where, d.name, problem));
  });
}

}  // namespace mstar

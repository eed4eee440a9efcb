#pragma once
// Arithmetic on numbers that came from users: sizes, counters, seeds. A sum
// or product that does not fit is refused (nullopt, or an error naming what
// was computed) instead of wrapping, which is undefined for signed integers
// and silently wrong for unsigned ones.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

#include "core/errors.h"

namespace mstar {

template <class T>
  requires std::is_integral_v<T>
constexpr std::optional<T> checked_add(T a, T b) {
  T r{};
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

template <class T>
  requires std::is_integral_v<T>
constexpr std::optional<T> checked_mul(T a, T b) {
  T r{};
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// The product of non-negative factors, or nullopt when it passes `limit`.
inline std::optional<std::uint64_t> checked_product(std::initializer_list<std::int64_t> factors,
                                                    std::uint64_t limit = UINT64_MAX) {
  std::uint64_t p = 1;
  for (std::int64_t f : factors) {
    if (f < 0 || __builtin_mul_overflow(p, static_cast<std::uint64_t>(f), &p) || p > limit) return std::nullopt;
  }
  return p;
}

// a + b, or InputError "<what>: a + b does not fit in 64 bits".
inline std::int64_t add_or_throw(std::int64_t a, std::int64_t b, std::string_view what) {
  if (auto r = checked_add(a, b)) return *r;
  throw InputError(fmt::format("{}: {} + {} does not fit in 64 bits", what, a, b));
}

}  // namespace mstar

#pragma once
// Config fields are declared once, as a tuple of (name, member, need, doc,
// range), and that one declaration serves parsing (JSON traces, YAML
// manifests), printing, validation of ranges and mstar-check's listing.
//
//   static constexpr auto fields() {
//     return std::make_tuple(field("num_layers", &C::num_layers, Need::required, "...", at_least(1)), ...);
//   }
#include <cstdint>
#include <limits>
#include <string_view>
#include <tuple>
#include <utility>

namespace mstar {

enum class Need : unsigned char {
  required,   // no default: a file that leaves it out is an error, never a silent default
  defaulted,  // has a default in the struct
  derived,    // required in a standalone config (a JSON trace); in a model
              // manifest it comes from the architecture and may not be given
};

// Inclusive bounds of an integer field.
struct Range {
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
};
constexpr Range at_least(int64_t lo) { return Range{lo, std::numeric_limits<int64_t>::max()}; }
constexpr Range any_value() { return Range{}; }

template <class C, class T>
struct FieldDecl {
  using Config = C;
  using Value = T;
  std::string_view name;
  T C::*member;
  Need need;
  std::string_view doc;
  Range range;
};

template <class C, class T>
constexpr FieldDecl<C, T> field(std::string_view name, T C::*member, Need need, std::string_view doc,
                                Range range = any_value()) {
  return {name, member, need, doc, range};
}

// Calls f(decl) for every field of Config.
template <class Config, class F>
void for_each_field(F&& f) {
  std::apply([&](const auto&... decl) { (f(decl), ...); }, Config::fields());
}

template <class Config>
bool has_field(std::string_view name) {
  bool found = false;
  for_each_field<Config>([&](const auto& d) { found = found || d.name == name; });
  return found;
}

}  // namespace mstar

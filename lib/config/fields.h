#pragma once
// Config fields are declared once, as a tuple of (name, member, need, doc),
// and that one declaration serves parsing (JSON here, YAML in the manifest
// loader), printing, equality checks in tests and mstar-check's listing.
//
//   static constexpr auto fields() {
//     return std::make_tuple(field("num_layers", &C::num_layers, Need::required, "..."), ...);
//   }
#include <string_view>
#include <tuple>
#include <utility>

namespace mstar {

// A required field has no default: a file that leaves it out is an error,
// never a silent default.
enum class Need : unsigned char { required, defaulted };

template <class C, class T>
struct FieldDecl {
  using Config = C;
  using Value = T;
  std::string_view name;
  T C::*member;
  Need need;
  std::string_view doc;
};

template <class C, class T>
constexpr FieldDecl<C, T> field(std::string_view name, T C::*member, Need need, std::string_view doc) {
  return {name, member, need, doc};
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

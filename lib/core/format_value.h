#pragma once
// How config values print, in one place, so every formatter and mstar-check
// agree.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/fields.h"

#include <fmt/format.h>

namespace mstar {

template <class T>
std::string format_value(const T& v) {
  return fmt::format("{}", v);
}
inline std::string format_value(bool v) { return v ? "true" : "false"; }
template <class T>
std::string format_value(const std::optional<T>& v) {
  return v ? format_value(*v) : std::string("none");
}

template <class T>
std::string format_value(const std::vector<T>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + format_value(v[i]);
  return out + "]";
}

// "name: value, name: value" over a config's declared fields.
template <class Config>
std::string format_fields(const Config& c) {
  std::string out;
  for_each_field<Config>([&](const auto& d) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{}: {}", d.name, format_value(c.*(d.member)));
  });
  return out;
}

}  // namespace mstar

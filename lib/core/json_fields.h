#pragma once
// Reading and writing configs as JSON through their declared fields (see
// fields.h). Unknown keys and missing required keys are errors naming the
// key; a value of the wrong type names the key and the value.
//
// Types beyond the basic ones provide read_json(j, where, key, T&) and
// write_json(const T&) overloads in namespace mstar, found by argument-
// dependent lookup.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "core/fields.h"
#include "core/dtype.h"
#include "core/errors.h"

namespace mstar {

[[noreturn]] void json_error(std::string_view where, std::string_view key, const std::string& why);

void read_json(const nlohmann::json& j, std::string_view where, std::string_view key, int64_t& out);
void read_json(const nlohmann::json& j, std::string_view where, std::string_view key, bool& out);
void read_json(const nlohmann::json& j, std::string_view where, std::string_view key, DType& out);
void read_json(const nlohmann::json& j, std::string_view where, std::string_view key, std::optional<int64_t>& out);

nlohmann::json write_json(int64_t v);
nlohmann::json write_json(bool v);
nlohmann::json write_json(DType v);
nlohmann::json write_json(const std::optional<int64_t>& v);
nlohmann::json write_json(const std::string& v);

// Reads every declared field of Config from object j (not validated).
template <class Config>
Config config_from_json(const nlohmann::json& j, std::string_view where) {
  if (!j.is_object()) throw ConfigError(fmt::format("{}: expected an object, got {}", where, json_excerpt(j)));
  for (const auto& [k, v] : j.items())
    if (!has_field<Config>(k)) json_error(where, k, "unknown key");
  Config c;
  for_each_field<Config>([&](const auto& d) {
    auto it = j.find(std::string(d.name));
    if (it == j.end()) {
      if (d.need != Need::defaulted) json_error(where, d.name, "missing required key");
      return;
    }
    read_json(*it, where, d.name, c.*(d.member));
  });
  return c;
}

template <class Config>
nlohmann::json config_to_json(const Config& c) {
  nlohmann::json j = nlohmann::json::object();
  for_each_field<Config>([&](const auto& d) { j[std::string(d.name)] = write_json(c.*(d.member)); });
  return j;
}

}  // namespace mstar

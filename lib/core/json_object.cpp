#include "core/json_object.h"

#include <cmath>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/json_text.h"

namespace mstar {

using nlohmann::json;

JsonFields::JsonFields(const json& j, std::string who) : j_(j), who_(std::move(who)) {
  if (!j_.is_object()) throw InputError(fmt::format("{}: expected a JSON object, got {}", who_, json_excerpt(j_)));
}

void JsonFields::only(std::initializer_list<std::string_view> known) const {
  for (const auto& [k, v] : j_.items()) {
    bool ok = false;
    for (std::string_view n : known) ok = ok || k == n;
    if (!ok) throw InputError(fmt::format("{}: unknown field '{}'", who_, k));
  }
}

int64_t JsonFields::integer(const char* key, int64_t lo, int64_t hi) const {
  if (!j_.contains(key)) throw InputError(fmt::format("{}: missing '{}'", who_, key));
  return integer(key, lo, hi, 0);
}

int64_t JsonFields::integer(const char* key, int64_t lo, int64_t hi, int64_t dflt) const {
  auto it = j_.find(key);
  if (it == j_.end()) return dflt;
  if (!it->is_number_integer()) throw InputError(fmt::format("{}: '{}' must be an integer, got {}", who_, key, json_excerpt(*it)));
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    throw InputError(fmt::format("{}: '{}' must be in [{}, {}], got {}", who_, key, lo, hi, json_excerpt(*it)));
  const auto v = it->get<int64_t>();
  if (v < lo || v > hi) throw InputError(fmt::format("{}: '{}' must be in [{}, {}], got {}", who_, key, lo, hi, v));
  return v;
}

double JsonFields::real(const char* key, double lo, double hi, double dflt) const {
  auto it = j_.find(key);
  if (it == j_.end()) return dflt;
  if (!it->is_number()) throw InputError(fmt::format("{}: '{}' must be a number, got {}", who_, key, json_excerpt(*it)));
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi)
    throw InputError(fmt::format("{}: '{}' must be in [{}, {}], got {}", who_, key, lo, hi, json_excerpt(*it)));
  return v;
}

std::string JsonFields::string(const char* key) const {
  auto it = j_.find(key);
  if (it == j_.end() || !it->is_string() || it->get<std::string>().empty())
    throw InputError(fmt::format("{}: needs a non-empty string '{}'", who_, key));
  return it->get<std::string>();
}

const json& JsonFields::at(const char* key) const {
  auto it = j_.find(key);
  if (it == j_.end()) throw InputError(fmt::format("{}: missing '{}'", who_, key));
  return *it;
}

}  // namespace mstar

#include "config/bounded_kv_json.h"

#include "core/errors.h"

namespace mstar {

namespace {

using nlohmann::json;

[[noreturn]] void bad(std::string_view where, std::string_view key, const std::string& why) {
  throw ConfigError(fmt::format("{}.{}: {}", where, key, why));
}

void read(const json& j, std::string_view where, std::string_view key, int64_t& out) {
  if (!j.is_number_integer()) bad(where, key, fmt::format("expected an integer, got {}", j.dump()));
  if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    bad(where, key, fmt::format("{} is too large", j.dump()));
  out = j.get<int64_t>();
}
void read(const json& j, std::string_view where, std::string_view key, bool& out) {
  if (!j.is_boolean()) bad(where, key, fmt::format("expected true or false, got {}", j.dump()));
  out = j.get<bool>();
}
void read(const json& j, std::string_view where, std::string_view key, DType& out) {
  if (!j.is_string()) bad(where, key, fmt::format("expected a dtype name, got {}", j.dump()));
  out = parse_dtype(j.get<std::string>(), fmt::format("{}.{}", where, key));
}
void read(const json& j, std::string_view where, std::string_view key, std::optional<int64_t>& out) {
  if (j.is_null()) {
    out.reset();
    return;
  }
  int64_t v = 0;
  read(j, where, key, v);
  out = v;
}
void read_affine(const json& j, std::string_view where, std::string_view key, SourceAffine& out) {
  if (j.is_number_integer()) {
    out = {0, 0};
    read(j, where, key, out.plus);
    return;
  }
  if (!j.is_object())
    bad(where, key, fmt::format("expected a count or {{\"per_source\": a, \"plus\": b}}, got {}", j.dump()));
  for (const auto& [k, v] : j.items()) {
    const std::string sub = fmt::format("{}.{}", key, k);
    if (k == "per_source") read(v, where, sub, out.per_source);
    else if (k == "plus") read(v, where, sub, out.plus);
    else bad(where, sub, "unknown key (expected per_source or plus)");
  }
}
void read(const json& j, std::string_view where, std::string_view key, RetentionRule& out) {
  if (!j.is_object()) bad(where, key, fmt::format("expected {{\"sink\": ..., \"window\": ...}}, got {}", j.dump()));
  bool has_sink = false, has_window = false;
  out = RetentionRule{};
  for (const auto& [k, v] : j.items()) {
    const std::string sub = fmt::format("{}.{}", key, k);
    if (k == "sink") read_affine(v, where, sub, out.sink), has_sink = true;
    else if (k == "window") read_affine(v, where, sub, out.window), has_window = true;
    else if (k == "window_includes_step") read(v, where, sub, out.window_includes_step);
    else bad(where, sub, "unknown key (expected sink, window or window_includes_step)");
  }
  if (!has_sink) bad(where, fmt::format("{}.sink", key), "missing required key");
  if (!has_window) bad(where, fmt::format("{}.window", key), "missing required key");
}

json affine_json(const SourceAffine& a) {
  if (a.per_source == 0) return a.plus;
  return json{{"per_source", a.per_source}, {"plus", a.plus}};
}
json value_json(int64_t v) { return v; }
json value_json(bool v) { return v; }
json value_json(DType v) { return std::string(to_string(v)); }
json value_json(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }
json value_json(const RetentionRule& r) {
  return json{{"sink", affine_json(r.sink)}, {"window", affine_json(r.window)},
              {"window_includes_step", r.window_includes_step}};
}

}  // namespace

BoundedKVConfig bounded_kv_config_from_json(const json& j, std::string_view where) {
  if (!j.is_object()) throw ConfigError(fmt::format("{}: expected an object, got {}", where, j.dump()));
  for (const auto& [k, v] : j.items())
    if (!has_field<BoundedKVConfig>(k)) bad(where, k, "unknown key");
  BoundedKVConfig c;
  for_each_field<BoundedKVConfig>([&](const auto& d) {
    auto it = j.find(std::string(d.name));
    if (it == j.end()) {
      if (d.need == Need::required) bad(where, d.name, "missing required key");
      return;
    }
    read(*it, where, d.name, c.*(d.member));
  });
  c.validate(where);
  return c;
}

json to_json(const BoundedKVConfig& c) {
  json j = json::object();
  for_each_field<BoundedKVConfig>([&](const auto& d) { j[std::string(d.name)] = value_json(c.*(d.member)); });
  return j;
}

}  // namespace mstar

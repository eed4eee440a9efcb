#include "core/json_text.h"
#include "resources/bounded_kv/json.h"

#include "core/json_fields.h"

namespace mstar {

using nlohmann::json;

namespace {

void read_affine(const json& j, std::string_view where, const std::string& key, SourceAffine& out) {
  if (j.is_number_integer()) {
    out = {0, 0};
    read_json(j, where, key, out.plus);
    return;
  }
  if (!j.is_object())
    json_error(where, key, fmt::format("expected a count or {{\"per_source\": a, \"plus\": b}}, got {}", json_excerpt(j)));
  for (const auto& [k, v] : j.items()) {
    const std::string sub = fmt::format("{}.{}", key, k);
    if (k == "per_source") read_json(v, where, sub, out.per_source);
    else if (k == "plus") read_json(v, where, sub, out.plus);
    else json_error(where, sub, "unknown key (expected per_source or plus)");
  }
}

json affine_json(const SourceAffine& a) {
  if (a.per_source == 0) return a.plus;
  return json{{"per_source", a.per_source}, {"plus", a.plus}};
}

}  // namespace

void read_json(const json& j, std::string_view where, std::string_view key, RetentionRule& out) {
  if (!j.is_object())
    json_error(where, key, fmt::format("expected {{\"sink\": ..., \"window\": ...}}, got {}", json_excerpt(j)));
  bool has_sink = false, has_window = false;
  out = RetentionRule{};
  for (const auto& [k, v] : j.items()) {
    const std::string sub = fmt::format("{}.{}", key, k);
    if (k == "sink") read_affine(v, where, sub, out.sink), has_sink = true;
    else if (k == "window") read_affine(v, where, sub, out.window), has_window = true;
    else if (k == "window_includes_step") read_json(v, where, sub, out.window_includes_step);
    else json_error(where, sub, "unknown key (expected sink, window or window_includes_step)");
  }
  if (!has_sink) json_error(where, fmt::format("{}.sink", key), "missing required key");
  if (!has_window) json_error(where, fmt::format("{}.window", key), "missing required key");
}

json write_json(const RetentionRule& r) {
  return json{{"sink", affine_json(r.sink)}, {"window", affine_json(r.window)},
              {"window_includes_step", r.window_includes_step}};
}

BoundedKVConfig bounded_kv_config_from_json(const json& j, std::string_view where) {
  BoundedKVConfig c = config_from_json<BoundedKVConfig>(j, where);
  c.validate(where);
  return c;
}

json to_json(const BoundedKVConfig& c) { return config_to_json(c); }

}  // namespace mstar

#include "core/json_text.h"
#include "resources/ring_kv/json.h"

#include "core/json_fields.h"

namespace mstar {

using nlohmann::json;

void read_json(const json& j, std::string_view where, std::string_view key, std::vector<RingGeometry>& out) {
  if (!j.is_array()) json_error(where, key, fmt::format("expected one geometry per layer, got {}", json_excerpt(j)));
  out.clear();
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string at = fmt::format("{}[{}]", key, i);
    if (!j[i].is_object())
      json_error(where, at, fmt::format("expected {{ring_frames, ring_buckets, pinned_dilation}}, got {}", json_excerpt(j[i])));
    RingGeometry g;
    bool frames = false, buckets = false;
    for (const auto& [k, v] : j[i].items()) {
      const std::string sub = fmt::format("{}.{}", at, k);
      if (k == "ring_frames") read_json(v, where, sub, g.ring_frames), frames = true;
      else if (k == "ring_buckets") read_json(v, where, sub, g.ring_buckets), buckets = true;
      else if (k == "pinned_dilation") read_json(v, where, sub, g.pinned_dilation);
      else json_error(where, sub, "unknown key (expected ring_frames, ring_buckets or pinned_dilation)");
    }
    if (!frames) json_error(where, at + ".ring_frames", "missing required key");
    if (!buckets) json_error(where, at + ".ring_buckets", "missing required key");
    out.push_back(g);
  }
}

json write_json(const std::vector<RingGeometry>& v) {
  json a = json::array();
  for (const auto& g : v)
    a.push_back(json{{"ring_frames", g.ring_frames}, {"ring_buckets", g.ring_buckets},
                     {"pinned_dilation", g.pinned_dilation}});
  return a;
}

RingKVConfig ring_kv_config_from_json(const json& j, std::string_view where) {
  RingKVConfig c = config_from_json<RingKVConfig>(j, where);
  c.validate(where);
  return c;
}

json to_json(const RingKVConfig& c) { return config_to_json(c); }

}  // namespace mstar

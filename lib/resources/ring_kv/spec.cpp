// The ring KV resource behind the ResourceSpec interface: what a manifest
// reader, a deployment's overrides, the memory plan and snapshots ask of it.
#include <fmt/format.h>

#include "core/json_object.h"
#include "core/json_text.h"
#include "resources/ring_kv/json.h"
#include "resources/ring_kv/manager.h"
#include "resources/ring_kv/memory.h"

namespace mstar {

using nlohmann::json;

std::vector<int64_t> RingKVSpec::served_layers() const { return layers_or_all(layers, config.num_layers); }

std::unique_ptr<Resource> RingKVSpec::build(const ResourceOptions& options) const {
  return std::make_unique<RingKVManager>(*this, options);
}

json RingKVSpec::config_json() const { return to_json(config); }

uint64_t RingKVSpec::bytes(std::span<const int64_t> /*source_lens*/) const {
  uint64_t total = 0;
  for (int64_t l = 0; l < config.num_layers; ++l)
    if (__builtin_add_overflow(total, config.layer_bytes(l), &total)) return UINT64_MAX;
  return total;
}

json RingKVSpec::plan_json(std::span<const int64_t> /*source_lens*/) const {
  const RingKVConfig& c = config;
  const RingKVMemory rep = memory_report(c);
  json groups = json::array();
  for (const auto& g : rep.groups)
    groups.push_back(json{{"kind", g.kind},
                          {"geometry",
                           {{"ring_frames", g.geometry.ring_frames},
                            {"ring_buckets", g.geometry.ring_buckets},
                            {"pinned_dilation", g.geometry.pinned_dilation}}},
                          {"layers", g.layers},
                          {"frames_per_session", g.frames_per_session},
                          {"addressed_frames", g.geometry.ring_buckets + 1},
                          {"bytes", g.bytes}});
  json cfg = config_json();
  cfg.erase("layers");  // shown by group
  return json{{"resource_key", resource_key}, {"type", "ring_kv"},
              {"layers", c.num_layers},        {"config", cfg},
              {"groups", groups},              {"sessions", c.num_sessions},
              {"bytes_per_session", rep.bytes_per_session},
              {"total_bytes", rep.total_bytes}};
}

std::vector<Shape> RingKVSpec::state_shapes() const {
  std::vector<Shape> out;
  for (int64_t l = 0; l < config.num_layers; ++l)
    out.push_back(Shape{2, config.num_kv_heads, config.capacity(l), config.head_dim});
  return out;
}

void RingKVSpec::check_state_fields(const json& fields, const std::string& where) const {
  const JsonFields r(fields, where);
  r.only({"next_frame", "flags"});
  if (!r.at("next_frame").is_null()) r.integer("next_frame", 0, RingKVBook::kMaxFrame + 1);
  const json& flags = r.at("flags");
  if (!flags.is_array() || static_cast<int64_t>(flags.size()) != config.num_layers)
    throw InputError(fmt::format("{}.flags: expected one list of frame flags per layer ({})", where, config.num_layers));
  for (int64_t l = 0; l < config.num_layers; ++l) {
    const json& fl = flags[static_cast<size_t>(l)];
    const int64_t n = config.layers[static_cast<size_t>(l)].ring_frames + 1;
    if (!fl.is_array() || static_cast<int64_t>(fl.size()) != n)
      throw InputError(fmt::format("{}.flags[{}]: expected {} frame flags", where, l, n));
    for (const json& x : fl)
      if (!x.is_number_unsigned() || x.get<uint64_t>() > 1)
        throw InputError(fmt::format("{}.flags[{}]: expected 0 or 1, got {}", where, l, json_excerpt(x)));
    if (fl.back() != 1)
      throw InputError(
          fmt::format("{}.flags[{}]: the scratch frame (the last flag) always counts as written", where, l));
  }
}

RequestState RingKVSpec::make_state(const json& fields, std::vector<HostBuffer> sections) const {
  auto s = std::make_unique<RingSessionState>();
  if (!fields.at("next_frame").is_null()) s->next_frame = fields.at("next_frame").get<int64_t>();
  s->written = fields.at("flags").get<std::vector<std::vector<uint8_t>>>();
  s->kv = std::move(sections);
  return s;
}

std::unique_ptr<ResourceState> RingSessionState::copy() const {
  auto c = std::make_unique<RingSessionState>();
  c->written = written;
  c->next_frame = next_frame;
  for (const HostBuffer& h : kv) c->kv.push_back(h.copy());
  return c;
}

json RingSessionState::fields() const {
  return json{{"next_frame", next_frame ? json(*next_frame) : json(nullptr)}, {"flags", written}};
}

}  // namespace mstar

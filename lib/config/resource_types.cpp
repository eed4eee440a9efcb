#include "config/resource_types.h"

#include <fmt/format.h>

#include "config/memory_plan.h"
#include "config/resource_yaml.h"
#include "resources/bounded_kv/json.h"
#include "config/yaml_field_source.h"
#include "core/errors.h"
#include "resources/bounded_kv/config.h"
#include "resources/ring_kv/config.h"

namespace mstar {

namespace {

std::unique_ptr<ResourceSpec> read_bounded(const YAML::Node& cfg, YamlContext& ctx, const std::string& path,
                                           const ResourceSite& site) {
  const TrunkShape& t = site.arch->trunk();
  auto spec = std::make_unique<BoundedKVSpec>(site.key, site.layers, BoundedKVConfig{});
  spec->config.num_layers = static_cast<int64_t>(site.layers.size());
  spec->config.num_heads = t.kv_heads;
  spec->config.head_dim = t.head_dim;
  if (!read_yaml_fields(cfg, ctx, path, spec->config, FieldMode::manifest)) return nullptr;
  if (!validated(*spec, cfg, ctx, path)) return nullptr;
  return spec;
}

std::unique_ptr<ResourceSpec> read_ring(const YAML::Node& cfg, YamlContext& ctx, const std::string& path,
                                        const ResourceSite& site) {
  const TrunkShape& t = site.arch->trunk();
  auto spec = std::make_unique<RingKVSpec>(site.key, site.layers, RingKVConfig{});
  spec->config.num_layers = static_cast<int64_t>(site.layers.size());
  spec->config.num_kv_heads = t.kv_heads;
  spec->config.head_dim = t.head_dim;
  spec->config.tokens_per_frame = site.arch->tokens_per_frame();
  ctx.layers_hint = spec->config.num_layers;
  if (!read_yaml_fields(cfg, ctx, path, spec->config, FieldMode::manifest)) return nullptr;
  if (!validated(*spec, cfg, ctx, path)) return nullptr;
  return spec;
}

// mstar-check's lines for a bounded resource's plan entry (BoundedKVSpec::plan_json).
std::string bounded_text(const nlohmann::json& r) {
  const nlohmann::json& c = r["config"];
  std::string o;
  o += fmt::format("  geometry  {} heads x head_dim {}, {} row(s) per request, sources {}..{} entries\n",
                   c["num_heads"].get<int64_t>(), c["head_dim"].get<int64_t>(),
                   c["rows_per_request"].get<int64_t>(), c["min_source_len"].get<int64_t>(),
                   c["max_source_len"].get<int64_t>());
  RetentionRule rule;
  read_json(c["retention"], "plan", "retention", rule);
  o += fmt::format("  retention {}\n", rule);
  o += fmt::format("  per request retains at most {} entries; a slot holds {} (sink {} + window {} + scratch {})\n",
                   r["max_retained_per_request"].get<int64_t>(), r["slot_tokens"].get<int64_t>(),
                   r["sink_capacity"].get<int64_t>(), r["window_capacity"].get<int64_t>(),
                   r["scratch_tokens"].get<int64_t>());
  o += fmt::format("  bytes     {} per slot x {} slots = {}\n", plan_bytes(r["bytes_per_slot"].get<uint64_t>()),
                   r["slots"].get<int64_t>(), plan_bytes(r["pool_bytes"].get<uint64_t>()));
  if (r["source_bytes"].get<uint64_t>() > 0)
    o += fmt::format("  sources   the workload's voices, stored once: {}; with the pool {}\n",
                     plan_bytes(r["source_bytes"].get<uint64_t>()), plan_bytes(r["total_bytes"].get<uint64_t>()));
  return o;
}

// mstar-check's lines for a ring's plan entry (RingKVSpec::plan_json).
std::string ring_text(const nlohmann::json& r) {
  const nlohmann::json& c = r["config"];
  std::string o;
  o += fmt::format("  geometry  {} kv heads x head_dim {}, {} tokens per frame\n", c["num_kv_heads"].get<int64_t>(),
                   c["head_dim"].get<int64_t>(), c["tokens_per_frame"].get<int64_t>());
  for (const nlohmann::json& g : r["groups"]) {
    const nlohmann::json& geo = g["geometry"];
    o += fmt::format("  {:<9} {} layers: ring_frames {}, ring_buckets {}, dilation {}: {} frames per session "
                     "({} addressed), {}\n",
                     g["kind"].get<std::string>(), g["layers"].size(), geo["ring_frames"].get<int64_t>(),
                     geo["ring_buckets"].get<int64_t>(), geo["pinned_dilation"].get<int64_t>(),
                     g["frames_per_session"].get<int64_t>(), g["addressed_frames"].get<int64_t>(),
                     plan_bytes(g["bytes"].get<uint64_t>()));
  }
  o += fmt::format("  bytes     {} per session x ({} sessions + 1 padding) = {}\n",
                   plan_bytes(r["bytes_per_session"].get<uint64_t>()), r["sessions"].get<int64_t>(),
                   plan_bytes(r["total_bytes"].get<uint64_t>()));
  return o;
}

// Never destroyed: a spec read through it may outlive static destruction
// (an engine held in a static).
std::vector<ResourceType>& registry() {
  static auto* types = new std::vector<ResourceType>{{"bounded_kv", read_bounded, bounded_text},
                                                     {"ring_kv", read_ring, ring_text}};
  return *types;
}

}  // namespace

std::vector<std::string> resource_type_names() {
  std::vector<std::string> out;
  for (const ResourceType& t : registry()) out.push_back(t.name);
  return out;
}

const ResourceType* find_resource_type(std::string_view name) {
  for (const ResourceType& t : registry())
    if (t.name == name) return &t;
  return nullptr;
}

void register_resource_type(ResourceType type) {
  if (type.name.empty()) throw ConfigError("register_resource_type: a resource type needs a name");
  if (!type.read) throw ConfigError(fmt::format("register_resource_type: resource type '{}' has no reader", type.name));
  if (find_resource_type(type.name))
    throw ConfigError(fmt::format("register_resource_type: resource type '{}' is already registered", type.name));
  registry().push_back(std::move(type));
}

bool validated(const ResourceSpec& spec, const YAML::Node& at, YamlContext& ctx, const std::string& path) {
  try {
    spec.validate(path);
    return true;
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    YAML::Node place = at;
    if (at.IsMap() && msg.rfind(path + ": ", 0) == 0) {
      const std::string rest = msg.substr(path.size() + 2);
      const std::string word = rest.substr(0, rest.find_first_of(" .["));
      for (const auto& kv : at)
        if (kv.first.IsScalar() && kv.first.Scalar() == word) place.reset(kv.second);
    }
    ctx.error(place, msg);
    return false;
  }
}

}  // namespace mstar

#pragma once
// Resource types, by name: how a model manifest states one. Each type's
// folder under lib/resources implements ResourceSpec (resource_spec.h); this
// registry holds how its `config:` block reads into one. Nothing above it
// branches on a resource type.
//
//   resources:
//     - resource_key: voice_kv
//       type: bounded_kv         # a registered name; the family says which its attention needs
//       nodes: attn.*
//       config: {...}            # read by the type's reader
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/yaml_read.h"
#include "models/architecture.h"
#include "resources/resource_spec.h"

namespace mstar {

// Where a resource sits in its model, as its reader needs it.
struct ResourceSite {
  std::string key;              // resource_key
  std::vector<int64_t> layers;  // the model layers it serves, ascending
  const Architecture* arch = nullptr;
};

// Reads a resource's `config:` block at `path` for `site` (dimensions the
// model fixes come from the architecture, and may not be given), reporting
// every problem through ctx at its place; null when there was any.
using ResourceReader = std::function<std::unique_ptr<ResourceSpec>(
    const YAML::Node& config, YamlContext& ctx, const std::string& path, const ResourceSite& site)>;

struct ResourceType {
  std::string name;  // the manifest's `type`
  ResourceReader read;
  // mstar-check's lines for its entry of the memory plan (plan_json); empty:
  // the plan prints its total bytes.
  std::function<std::string(const nlohmann::json& entry)> plan_text;
};

// The registered types' names, shipped ones first; a lookup throws nothing,
// and a pointer stays valid for the process's life.
std::vector<std::string> resource_type_names();
const ResourceType* find_resource_type(std::string_view name);
// Adds a type (an embedder's, a test's). Throws ConfigError when the name
// is taken or empty, or the reader is missing.
void register_resource_type(ResourceType type);

// Runs spec.validate(path); its ConfigError becomes a diagnostic placed at
// the field its message names ("<path>: <field> ..."), or at `at`.
bool validated(const ResourceSpec& spec, const YAML::Node& at, YamlContext& ctx, const std::string& path);

}  // namespace mstar

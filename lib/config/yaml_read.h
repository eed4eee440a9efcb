#pragma once
// Reading YAML into config structs with every problem reported at its place.
// Readers return false (after adding a diagnostic) instead of throwing, so a
// file's problems are all found in one run.
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "config/diagnostics.h"
#include "core/dtype.h"
#include "core/fields.h"

namespace mstar {

class YamlContext {
 public:
  YamlContext(std::string file, Diagnostics& diags) : file_(std::move(file)), diags_(diags) {}
  // A node grafted into the tree from elsewhere (a --set value), reported
  // under its own label.
  void graft(const YAML::Node& node, std::string label) { grafts_.emplace_back(node, std::move(label)); }
  void error(const YAML::Node& at, const std::string& message);
  Diagnostics& diags() { return diags_; }
  const std::string& file() const { return file_; }

  // How many layers a geometry pattern expands to (set by the ring reader).
  int64_t layers_hint = 0;

 private:
  std::string file_;
  Diagnostics& diags_;
  std::vector<std::pair<YAML::Node, std::string>> grafts_;
};

// A mapping's entries in file order. read_map reports a non-mapping, a
// non-string key, a duplicate key and any key not in `allowed` (with a "did
// you mean" when one is close); the entries it returns are the good ones.
struct MapEntries {
  YAML::Node node;
  std::vector<std::pair<std::string, YAML::Node>> items;
  std::vector<YAML::Node> key_nodes;  // [items]: where each key is written
  const YAML::Node* find(const std::string& key) const;
  const YAML::Node* key_node(const std::string& key) const;
};
std::optional<MapEntries> read_map(const YAML::Node& n, YamlContext& ctx, const std::string& path,
                                   const std::vector<std::string>& allowed);
// The same, with any key allowed (a map keyed by names the caller checks).
std::optional<MapEntries> read_any_map(const YAML::Node& n, YamlContext& ctx, const std::string& path);

std::string describe(const YAML::Node& n);  // "'abc'", "a mapping", "a sequence", "nothing"

bool read_yaml(const YAML::Node& n, YamlContext& ctx, const std::string& path, int64_t& out, Range range = {});
bool read_yaml(const YAML::Node& n, YamlContext& ctx, const std::string& path, bool& out, Range = {});
bool read_yaml(const YAML::Node& n, YamlContext& ctx, const std::string& path, DType& out, Range = {});
bool read_yaml(const YAML::Node& n, YamlContext& ctx, const std::string& path, std::string& out, Range = {});
bool read_yaml(const YAML::Node& n, YamlContext& ctx, const std::string& path, std::optional<int64_t>& out,
               Range range = {});
// A finite real number.
bool read_yaml(const YAML::Node& n, YamlContext& ctx, const std::string& path, double& out, Range = {});

enum class FieldMode : unsigned char {
  standalone,  // every non-defaulted field must be given
  manifest,    // derived fields come from the architecture and may not be given
};

template <class Config>
void field_names(std::vector<std::string>& names) {
  for_each_field<Config>([&](const auto& d) { names.emplace_back(d.name); });
}

// Reads Config's declared fields from a mapping's entries (read_map checked
// the keys); other types are read by read_yaml overloads found by
// argument-dependent lookup.
template <class Config>
bool read_fields(const MapEntries& m, YamlContext& ctx, const std::string& path, Config& out, FieldMode mode) {
  bool ok = true;
  for_each_field<Config>([&](const auto& d) {
    const std::string key(d.name);
    const YAML::Node* v = m.find(key);
    if (mode == FieldMode::manifest && d.need == Need::derived) {
      if (v) {
        ctx.error(*v, fmt::format("{}.{} is not set here: it comes from the model's architecture", path, key));
        ok = false;
      }
      return;
    }
    if (!v) {
      if (d.need != Need::defaulted) {
        ctx.error(m.node, fmt::format("{}: missing required key '{}' ({})", path, key, d.doc));
        ok = false;
      }
      return;
    }
    ok = read_yaml(*v, ctx, path + "." + key, out.*(d.member), d.range) && ok;
  });
  return ok;
}

// A mapping holding exactly Config's fields.
template <class Config>
bool read_yaml_fields(const YAML::Node& n, YamlContext& ctx, const std::string& path, Config& out, FieldMode mode) {
  std::vector<std::string> names;
  field_names<Config>(names);
  auto m = read_map(n, ctx, path, names);
  if (!m) return false;
  const bool keys_ok = m->items.size() == static_cast<size_t>(m->node.size());
  return read_fields(*m, ctx, path, out, mode) && keys_ok;
}

}  // namespace mstar

#include "models/manifest.h"

#include <regex>
#include <set>

#include <fmt/format.h>

#include "config/resource_yaml.h"
#include "config/yaml_read.h"
#include "config/yaml_source.h"
#include "core/errors.h"
#include "models/safetensors.h"
#include "models/tensors.h"

namespace mstar {

std::string_view to_string(ModelKind k) { return k == ModelKind::tts ? "tts" : "world"; }

const std::string& ResourceDecl::key() const {
  return std::visit([](const auto& s) -> const std::string& { return s.resource_key; }, spec);
}

namespace {

// nodes: "attn.*" (every layer) or a list of "attn.N".
bool read_nodes(const YAML::Node& n, YamlContext& ctx, const std::string& path, int64_t layers,
                std::set<std::string>& out) {
  if (n.IsScalar() && n.Scalar() == "attn.*") {
    for (int64_t l = 0; l < layers; ++l) out.insert(fmt::format("attn.{}", l));
    return true;
  }
  if (!n.IsSequence() || n.size() == 0) {
    ctx.error(n, fmt::format("{}: expected 'attn.*' or a list of 'attn.N', got {}", path, describe(n)));
    return false;
  }
  static const std::regex node_re(R"(^attn\.(\d{1,6})$)");
  bool ok = true;
  for (size_t i = 0; i < n.size(); ++i) {
    std::smatch m;
    const std::string s = n[i].IsScalar() ? n[i].Scalar() : "";
    if (!std::regex_match(s, m, node_re) || std::stoll(m[1].str()) >= layers) {
      ctx.error(n[i], fmt::format("{}[{}]: '{}' is not an attention node of this model (attn.0 .. attn.{})", path, i,
                                  n[i].IsScalar() ? s : describe(n[i]), layers - 1));
      ok = false;
    } else if (!out.insert(s).second) {
      ctx.error(n[i], fmt::format("{}[{}]: '{}' is listed twice", path, i, s));
      ok = false;
    }
  }
  return ok;
}

// Runs a config's validate(), turning its exception into a diagnostic placed
// at the field its message names ("<path>: <field> ..."), or at the config.
template <class Config>
bool validated(const Config& c, const YAML::Node& at, YamlContext& ctx, const std::string& path) {
  try {
    c.validate(path);
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

std::optional<ResourceDecl> read_resource(const YAML::Node& n, YamlContext& ctx, const std::string& path,
                                          const ModelManifest& m) {
  auto e = read_map(n, ctx, path, {"resource_key", "type", "nodes", "config"});
  if (!e) return std::nullopt;
  bool ok = e->items.size() == n.size();
  for (const char* key : {"resource_key", "type", "nodes", "config"})
    if (!e->find(key)) {
      ctx.error(n, fmt::format("{}: missing required key '{}'", path, key));
      ok = false;
    }
  if (!ok) return std::nullopt;
  std::string key, type;
  ok = read_yaml(*e->find("resource_key"), ctx, path + ".resource_key", key) && ok;
  ok = read_yaml(*e->find("type"), ctx, path + ".type", type) && ok;
  std::set<std::string> nodes;
  ok = read_nodes(*e->find("nodes"), ctx, path + ".nodes", m.arch.common.layers, nodes) && ok;
  if (!ok) return std::nullopt;
  const YAML::Node& cfg = *e->find("config");
  const std::string cpath = path + ".config";
  const auto& a = m.arch.common;
  if (type == "bounded_kv") {
    BoundedKVSpec spec{key, nodes, {}};
    spec.config.num_layers = static_cast<int64_t>(nodes.size());
    spec.config.num_heads = a.kv_heads;
    spec.config.head_dim = a.head_dim;
    if (!read_yaml_fields(cfg, ctx, cpath, spec.config, FieldMode::manifest)) return std::nullopt;
    if (!validated(spec.config, cfg, ctx, cpath)) return std::nullopt;
    return ResourceDecl{type, spec};
  }
  if (type == "ring_kv") {
    if (m.kind != ModelKind::world) {
      ctx.error(*e->find("type"), fmt::format("{}.type: ring_kv needs frames; only a model of kind world has them",
                                              path));
      return std::nullopt;
    }
    RingKVSpec spec{key, nodes, {}};
    spec.config.num_layers = static_cast<int64_t>(nodes.size());
    spec.config.num_kv_heads = a.kv_heads;
    spec.config.head_dim = a.head_dim;
    spec.config.tokens_per_frame = m.arch.world.tokens_per_frame;
    ctx.layers_hint = spec.config.num_layers;
    if (!read_yaml_fields(cfg, ctx, cpath, spec.config, FieldMode::manifest)) return std::nullopt;
    if (!validated(spec.config, cfg, ctx, cpath)) return std::nullopt;
    return ResourceDecl{type, spec};
  }
  const std::string near = did_you_mean(type, {"bounded_kv", "ring_kv"});
  ctx.error(*e->find("type"), fmt::format("{}.type: unknown resource type '{}' (expected bounded_kv or ring_kv){}",
                                          path, type, near.empty() ? "" : fmt::format("; did you mean '{}'?", near)));
  return std::nullopt;
}

bool check_architecture(const MapEntries& e, YamlContext& ctx, const ModelManifest& m) {
  const auto& c = m.arch.common;
  bool ok = true;
  auto at = [&](const char* key) { return e.find(key) ? *e.find(key) : e.node; };
  if (c.positions != "stream" && c.positions != "cache") {
    ctx.error(at("positions"), fmt::format("architecture.positions: expected stream or cache, got '{}'", c.positions));
    ok = false;
  } else if (c.positions == "cache" && m.kind != ModelKind::tts) {
    ctx.error(at("positions"), "architecture.positions: cache positions are offered for tts models (bounded KV) only");
    ok = false;
  }
  if (c.positions == "cache" && c.head_dim % 2 != 0) {
    ctx.error(at("head_dim"), fmt::format("architecture.head_dim {} must be even for rotary positions", c.head_dim));
    ok = false;
  }
  if (c.heads % c.kv_heads != 0) {
    ctx.error(at("kv_heads"), fmt::format("architecture.kv_heads {} must divide heads {}", c.kv_heads, c.heads));
    ok = false;
  }
  if (m.kind == ModelKind::tts) {
    if (c.heads * c.head_dim != c.width) {
      ctx.error(at("head_dim"), fmt::format("architecture: heads {} x head_dim {} = {} must equal width {} for a tts "
                                            "model",
                                            c.heads, c.head_dim, c.heads * c.head_dim, c.width));
      ok = false;
    }
    if (m.arch.tts.end_token >= m.arch.tts.vocab_size) {
      ctx.error(at("end_token"), fmt::format("architecture.end_token {} must be below vocab_size {}",
                                             m.arch.tts.end_token, m.arch.tts.vocab_size));
      ok = false;
    }
  } else {
    const auto& w = m.arch.world;
    if (w.frame_height * w.frame_width != w.tokens_per_frame) {
      ctx.error(at("tokens_per_frame"),
                fmt::format("architecture.tokens_per_frame {} must equal frame_height {} x frame_width {}",
                            w.tokens_per_frame, w.frame_height, w.frame_width));
      ok = false;
    }
    if (c.head_dim % 2 != 0 || w.rope_time + w.rope_height + w.rope_width != c.head_dim / 2) {
      ctx.error(at("rope_time"), fmt::format("architecture: rope_time {} + rope_height {} + rope_width {} must equal "
                                             "head_dim / 2 = {} (head_dim {} must be even)",
                                             w.rope_time, w.rope_height, w.rope_width, c.head_dim / 2, c.head_dim));
      ok = false;
    }
  }
  return ok;
}

void check_weights(const YAML::Node& at, YamlContext& ctx, const ModelManifest& m) {
  const auto file = m.path.parent_path() / m.weights.file;
  SafetensorsHeader h;
  try {
    h = read_safetensors_header(file);
  } catch (const InputError& e) {
    ctx.error(at, fmt::format("weights.file: {}", e.what()));
    return;
  }
  const std::string want_dtype = safetensors_dtype(m.weights.dtype);
  std::set<std::string> expected;
  for (const TensorSpec& t : expected_tensors(m.kind, m.arch)) {
    expected.insert(t.name);
    auto it = h.tensors.find(t.name);
    if (it == h.tensors.end()) {
      ctx.error(at, fmt::format("weights.file {}: tensor '{}' is missing", m.weights.file, t.name));
      continue;
    }
    if (it->second.dtype != want_dtype)
      ctx.error(at, fmt::format("weights.file {}: tensor '{}' is {} but weights.dtype says {}", m.weights.file, t.name,
                                it->second.dtype, want_dtype));
    else if (it->second.shape != t.shape)
      ctx.error(at, fmt::format("weights.file {}: tensor '{}' has shape [{}] but the architecture needs [{}]",
                                m.weights.file, t.name, fmt::join(it->second.shape, ", "), fmt::join(t.shape, ", ")));
    else if (it->second.end - it->second.begin !=
             static_cast<uint64_t>(t.numel()) * dtype_size(m.weights.dtype))
      ctx.error(at, fmt::format("weights.file {}: tensor '{}' holds {} bytes, not the {} its shape needs",
                                m.weights.file, t.name, it->second.end - it->second.begin,
                                static_cast<uint64_t>(t.numel()) * dtype_size(m.weights.dtype)));
  }
  for (const auto& [name, e] : h.tensors)
    if (!expected.count(name))
      ctx.error(at, fmt::format("weights.file {}: unexpected tensor '{}' (not part of this architecture)",
                                m.weights.file, name));
}

}  // namespace

std::optional<ModelManifest> load_manifest(const std::filesystem::path& path, const std::string& label,
                                           Diagnostics& diags) {
  const size_t errors_before = diags.all().size();
  auto root = load_yaml_file(path, label, diags);
  if (!root) return std::nullopt;
  YamlContext ctx(label, diags);
  auto top = read_map(*root, ctx, "manifest", {"name", "kind", "architecture", "weights", "resources"});
  if (!top) return std::nullopt;
  ModelManifest m;
  m.path = path;
  for (const char* key : {"name", "kind", "architecture", "weights", "resources"})
    if (!top->find(key)) ctx.error(*root, fmt::format("manifest: missing required key '{}'", key));
  if (const YAML::Node* n = top->find("name")) read_yaml(*n, ctx, "name", m.name);
  bool kind_ok = false;
  if (const YAML::Node* n = top->find("kind")) {
    std::string k;
    if (read_yaml(*n, ctx, "kind", k)) {
      if (k == "tts" || k == "world") {
        m.kind = k == "tts" ? ModelKind::tts : ModelKind::world;
        kind_ok = true;
      } else {
        ctx.error(*n, fmt::format("kind: unknown model kind '{}' (expected tts or world)", k));
      }
    }
  }
  bool arch_ok = false, common_ok = false;
  if (const YAML::Node* n = top->find("architecture"); n && kind_ok) {
    std::vector<std::string> names;
    field_names<CommonArchitecture>(names);
    if (m.kind == ModelKind::tts) field_names<TtsArchitecture>(names);
    else field_names<WorldArchitecture>(names);
    if (auto e = read_map(*n, ctx, "architecture", names)) {
      arch_ok = e->items.size() == n->size();
      common_ok = read_fields(*e, ctx, "architecture", m.arch.common, FieldMode::standalone);
      arch_ok = common_ok && arch_ok;
      if (m.kind == ModelKind::tts) arch_ok = read_fields(*e, ctx, "architecture", m.arch.tts, FieldMode::standalone) && arch_ok;
      else arch_ok = read_fields(*e, ctx, "architecture", m.arch.world, FieldMode::standalone) && arch_ok;
      if (arch_ok) arch_ok = check_architecture(*e, ctx, m);
    }
  }
  if (const YAML::Node* n = top->find("weights")) {
    if (read_yaml_fields(*n, ctx, "weights", m.weights, FieldMode::standalone)) {
      const bool has_seed = m.weights.dummy_seed.has_value(), has_file = !m.weights.file.empty();
      if (has_seed == has_file)
        ctx.error(*n, "weights: give exactly one of dummy_seed (a deterministic dummy initialisation) or file (a "
                      "safetensors file)");
      else if (has_file && arch_ok)
        check_weights((*n)["file"], ctx, m);
    }
  }
  // Resources need the common architecture (layers, heads, head_dim); they
  // are checked even when a kind-specific or cross-field fact failed.
  if (const YAML::Node* n = top->find("resources"); n && common_ok) {
    if (!n->IsSequence()) {
      ctx.error(*n, fmt::format("resources: expected a list of resources, got {}", describe(*n)));
    } else {
      std::map<std::string, std::string> node_owner;
      for (size_t i = 0; i < n->size(); ++i) {
        const std::string rpath = fmt::format("resources[{}]", i);
        auto r = read_resource((*n)[i], ctx, rpath, m);
        if (!r) continue;
        for (const auto& other : m.resources)
          if (other.key() == r->key()) ctx.error((*n)[i]["resource_key"], fmt::format("{}.resource_key: '{}' is declared twice", rpath, r->key()));
        const auto& nodes = std::visit([](const auto& s) -> const std::set<std::string>& { return s.nodes; }, r->spec);
        for (const auto& node : nodes)
          if (auto [it, fresh] = node_owner.emplace(node, r->key()); !fresh)
            ctx.error((*n)[i]["nodes"], fmt::format("{}.nodes: '{}' already belongs to resource '{}'", rpath, node,
                                                    it->second));
        m.resources.push_back(std::move(*r));
      }
    }
  }
  if (diags.all().size() != errors_before) return std::nullopt;
  return m;
}

}  // namespace mstar

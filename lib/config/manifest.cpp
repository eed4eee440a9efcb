#include "config/manifest.h"

#include <map>
#include <regex>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "config/resource_types.h"
#include "config/yaml_field_source.h"
#include "config/yaml_read.h"
#include "config/yaml_source.h"
#include "core/errors.h"
#include "core/gguf.h"
#include "models/safetensors.h"
#include "models/stored_tensors.h"

namespace mstar {

std::vector<SpecRef> ModelManifest::resource_specs() const {
  std::vector<SpecRef> out;
  for (const ResourceDecl& r : resources) out.push_back(r.spec);
  return out;
}

std::vector<std::filesystem::path> ModelManifest::weight_files() const {
  if (!checkpoint.empty()) return family->weight_files(checkpoint);
  if (weights.file.empty()) return {};
  return mstar::weight_files(path.parent_path() / weights.file);
}

Weights ModelManifest::load_weights(Backend b, const Progress& progress) const {
  Weights w = weights.dummy_seed && checkpoint.empty()
                  ? Weights::dummy(arch->tensors(), static_cast<uint64_t>(*weights.dummy_seed))
                  : Weights::load(weight_files(), arch->tensors(), progress);
  w.arrange_for(b);
  return w;
}

namespace {

// nodes: "attn.*" (every layer) or a list of "attn.N": the model layers a
// resource serves, ascending.
bool read_nodes(const YAML::Node& n, YamlContext& ctx, const std::string& path, int64_t layers,
                std::vector<int64_t>& out) {
  if (n.IsScalar() && n.Scalar() == "attn.*") {
    for (int64_t l = 0; l < layers; ++l) out.push_back(l);
    return true;
  }
  if (!n.IsSequence() || n.size() == 0) {
    ctx.error(n, fmt::format("{}: expected 'attn.*' or a list of 'attn.N', got {}", path, describe(n)));
    return false;
  }
  static const std::regex node_re(R"(^attn\.(\d{1,6})$)");
  bool ok = true;
  std::set<int64_t> seen;
  for (size_t i = 0; i < n.size(); ++i) {
    std::smatch m;
    const std::string s = n[i].IsScalar() ? n[i].Scalar() : "";
    const int64_t l = std::regex_match(s, m, node_re) ? std::stoll(m[1].str()) : -1;
    if (l < 0 || l >= layers) {
      ctx.error(n[i], fmt::format("{}[{}]: '{}' is not an attention node of this model (attn.0 .. attn.{})", path, i,
                                  n[i].IsScalar() ? s : describe(n[i]), layers - 1));
      ok = false;
    } else if (!seen.insert(l).second) {
      ctx.error(n[i], fmt::format("{}[{}]: '{}' is listed twice", path, i, s));
      ok = false;
    }
  }
  out.assign(seen.begin(), seen.end());
  return ok;
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
  const TrunkShape& t = m.arch->trunk();
  std::vector<int64_t> layers;
  ok = read_nodes(*e->find("nodes"), ctx, path + ".nodes", t.layers, layers) && ok;
  if (!ok) return std::nullopt;
  const ResourceType* found = find_resource_type(type);
  if (!found) {
    const std::vector<std::string> names = resource_type_names();
    const std::string near = did_you_mean(type, names);
    ctx.error(*e->find("type"), fmt::format("{}.type: unknown resource type '{}' (expected {}){}", path, type,
                                            fmt::join(names, " or "),
                                            near.empty() ? "" : fmt::format("; did you mean '{}'?", near)));
    return std::nullopt;
  }
  if (type != m.family->resource_type) {
    ctx.error(*e->find("type"), fmt::format("{}.type: a model of kind {} attends through {}, not {}", path,
                                            m.family->name, m.family->resource_type, type));
    return std::nullopt;
  }
  std::unique_ptr<ResourceSpec> spec =
      found->read(*e->find("config"), ctx, path + ".config", ResourceSite{key, layers, m.arch.get()});
  if (!spec) return std::nullopt;
  return ResourceDecl{SpecRef(std::move(spec))};
}

// Checks the weights files' headers against the architecture's tensors and
// sums their bytes; `what` names the key the files come from. A checkpoint's
// tensors may be any of F32, F16, BF16; a manifest's must be weights.dtype.
void check_weights(const YAML::Node& at, YamlContext& ctx, ModelManifest& m, const std::string& what) {
  std::vector<std::filesystem::path> files;
  try {
    files = m.weight_files();
  } catch (const InputError& e) {
    ctx.error(at, fmt::format("{}: {}", what, e.what()));
    return;
  }
  const std::string label = m.checkpoint.empty() ? fmt::format("weights.file {}", m.weights.file)
                                                 : fmt::format("checkpoint {}", m.checkpoint.string());
  const std::optional<std::string> want_dtype =
      m.checkpoint.empty() ? std::optional<std::string>(safetensors_name(m.weights.dtype)) : std::nullopt;
  std::map<std::string, StoredTensor> found;
  try {
    found = index_weights(files);
  } catch (const InputError& e) {
    ctx.error(at, fmt::format("{}: {}", what, e.what()));
    return;
  }
  std::set<std::string> expected;
  // Tensors stored in another dtype than weights.dtype says, by that dtype:
  // one error each, not one per tensor (a whole file usually differs).
  std::map<std::string, std::vector<std::string>> other_dtype;
  for (const TensorSpec& t : m.arch->tensors()) {
    expected.insert(t.name);
    auto it = found.find(t.name);
    if (it == found.end()) {
      ctx.error(at, fmt::format("{}: tensor '{}' is missing", label, t.name));
      continue;
    }
    const StoredTensor& e = it->second;
    const std::optional<DType> dt = e.dtype;
    const int64_t row = t.shape.empty() ? 1 : t.shape.back();
    if (want_dtype && e.stored_dtype != *want_dtype)
      other_dtype[e.stored_dtype].push_back(t.name);
    else if (!dt)
      ctx.error(at, fmt::format("{}: tensor '{}' has dtype {} (expected {})", label, t.name, e.stored_dtype,
                                safetensors_names()));
    else if (e.shape != t.shape)
      ctx.error(at, fmt::format("{}: tensor '{}' has shape [{}] but the architecture needs [{}]", label, t.name,
                                fmt::join(e.shape, ", "), fmt::join(t.shape, ", ")));
    else if (!fits_blocks(*dt, row))
      ctx.error(at, fmt::format("{}: tensor '{}' is {}, whose blocks of {} do not divide its rows of {}", label,
                                t.name, to_string(*dt), dtype_traits(*dt).block, row));
    else if (e.bytes != static_cast<uint64_t>(row_bytes(*dt, t.numel())))
      ctx.error(at, fmt::format("{}: tensor '{}' holds {} bytes, not the {} its shape needs", label, t.name, e.bytes,
                                static_cast<uint64_t>(row_bytes(*dt, t.numel()))));
    else
      m.weights_bytes += e.bytes;
  }
  for (const auto& [stored, names] : other_dtype) {
    const std::optional<DType> dt = find_safetensors_dtype(stored);
    ctx.error(at, fmt::format("{}: {} tensor{} ('{}'{}) {} {} but weights.dtype says {}{}", label, names.size(),
                              names.size() == 1 ? "" : "s", names.front(), names.size() == 1 ? "" : ", ...",
                              names.size() == 1 ? "is" : "are", stored, *want_dtype,
                              dt && names.size() == expected.size()  // the whole file: the setting is what differs
                                  ? fmt::format("; set weights.dtype: {}", to_string(*dt))
                                  : std::string()));
  }
  for (const auto& [name, e] : found)
    if (!expected.count(name))
      ctx.error(at, fmt::format("{}: unexpected tensor '{}' (not part of this architecture)", label, name));
}

std::string names_list(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

}  // namespace

std::optional<ModelManifest> load_manifest(const std::filesystem::path& path, const std::string& label,
                                           Diagnostics& diags) {
  const size_t errors_before = diags.all().size();
  auto root = load_yaml_file(path, label, diags);
  if (!root) return std::nullopt;
  YamlContext ctx(label, diags);
  auto top = read_map(*root, ctx, "manifest",
                      {"name", "kind", "architecture", "weights", "checkpoint", "positions", "tokenizer", "resources"});
  if (!top) return std::nullopt;
  ModelManifest m;
  m.path = path;
  for (const char* key : {"name", "kind", "resources"})
    if (!top->find(key)) ctx.error(*root, fmt::format("manifest: missing required key '{}'", key));
  if (const YAML::Node* n = top->find("name")) read_yaml(*n, ctx, "name", m.name);
  if (const YAML::Node* n = top->find("kind")) {
    std::string k;
    if (read_yaml(*n, ctx, "kind", k)) {
      m.family = find_family(k);
      if (!m.family) {
        const std::string near = did_you_mean(k, family_names());
        ctx.error(*n, fmt::format("kind: unknown model kind '{}' (expected {}){}", k, names_list(family_names()),
                                  near.empty() ? "" : fmt::format("; did you mean '{}'?", near)));
      }
    }
  }
  if (m.family && m.family->from_checkpoint) {
    // The architecture and weights are the checkpoint's: stating them here
    // would be a second, possibly different, truth.
    for (const char* key : {"architecture", "weights"})
      if (const YAML::Node* n = top->find(key))
        ctx.error(*n, fmt::format("{}: not set for a model of kind {}: it comes from the checkpoint folder's "
                                  "config.json and safetensors files",
                                  key, m.family->name));
    std::string positions = "stream";
    if (const YAML::Node* n = top->find("positions")) {
      if (read_yaml(*n, ctx, "positions", positions) && positions != "stream" && positions != "cache") {
        ctx.error(*n, fmt::format("positions: expected stream or cache, got '{}'", positions));
        positions = "stream";
      }
    }
    const YAML::Node* cp = top->find("checkpoint");
    std::string folder;
    if (!cp) ctx.error(*root, fmt::format("manifest: missing required key 'checkpoint' (a model of kind {} is a "
                                          "Hugging Face folder)",
                                          m.family->name));
    else if (read_yaml(*cp, ctx, "checkpoint", folder)) {
      m.checkpoint = path.parent_path() / folder;
      ArchitectureInput in;
      in.checkpoint = m.checkpoint;
      in.positions = positions;
      in.error = [&](const std::string& msg) { ctx.error(*cp, fmt::format("checkpoint: {}", msg)); };
      std::unique_ptr<Architecture> arch = m.family->read_architecture(in);
      if (arch) {
        m.arch = std::move(arch);
        check_weights(*cp, ctx, m, "checkpoint");
      }
    }
  } else {
    for (const char* key : {"checkpoint", "positions"})
      if (const YAML::Node* n = top->find(key))
        ctx.error(*n, fmt::format("{}: only a checkpoint family (llama, qwen2) names one; this model states its "
                                  "architecture",
                                  key));
    for (const char* key : {"architecture", "weights"})
      if (!top->find(key)) ctx.error(*root, fmt::format("manifest: missing required key '{}'", key));
    if (const YAML::Node* n = top->find("architecture"); n && m.family) {
      if (auto e = read_any_map(*n, ctx, "architecture")) {
        YamlFieldSource src(*e, ctx, "architecture");
        ArchitectureInput in;
        in.fields = &src;
        std::unique_ptr<Architecture> arch = m.family->read_architecture(in);
        const bool keys_ok = src.finish() && e->items.size() == n->size();
        if (arch && keys_ok) m.arch = std::move(arch);
      }
    }
    if (const YAML::Node* n = top->find("weights")) {
      if (read_yaml_fields(*n, ctx, "weights", m.weights, FieldMode::standalone)) {
        const bool has_seed = m.weights.dummy_seed.has_value(), has_file = !m.weights.file.empty();
        if (has_seed == has_file) {
          ctx.error(*n, "weights: give exactly one of dummy_seed (a deterministic dummy initialisation) or file (a "
                        "safetensors file or shard index)");
        } else if (has_file && m.arch) {
          check_weights((*n)["file"], ctx, m, "weights.file");
        } else if (m.arch) {
          for (const TensorSpec& t : m.arch->tensors()) {
            const int64_t row = t.shape.empty() ? 1 : t.shape.back();
            if (fits_blocks(m.weights.dtype, row))
              m.weights_bytes += row_bytes(m.weights.dtype, t.numel());
            else
              ctx.error(*n, fmt::format("weights.dtype: {}'s blocks of {} do not divide tensor '{}''s rows of {}",
                                        to_string(m.weights.dtype), dtype_traits(m.weights.dtype).block, t.name, row));
          }
        }
      }
    }
  }
  // The tokenizer: named, or the checkpoint's own.
  const YAML::Node* tn = top->find("tokenizer");
  std::string tokenizer;
  if (tn && read_yaml(*tn, ctx, "tokenizer", tokenizer)) m.tokenizer_path = path.parent_path() / tokenizer;
  std::error_code ec;
  if (!tn && !m.checkpoint.empty() && std::filesystem::exists(m.checkpoint / "tokenizer.json", ec))
    m.tokenizer_path = m.checkpoint;
  // A GGUF checkpoint's own, when it is one mstar reads (gpt2-style BPE:
  // docs/gguf.md); with another, requests give token ids, as with a folder
  // that has no tokenizer.json.
  if (!tn && m.arch && std::filesystem::is_regular_file(m.checkpoint, ec) && is_gguf(m.checkpoint)) {
    try {
      const GgufFile f = read_gguf(m.checkpoint);  // held: `model` points into it
      const GgufValue* model = f.find("tokenizer.ggml.model");
      if (model && model->type == GgufType::string && model->text == "gpt2") m.tokenizer_path = m.checkpoint;
    } catch (const InputError& e) {  // the file changed since its architecture was read
      ctx.error(*top->find("checkpoint"), fmt::format("checkpoint: {}", e.what()));
    }
  }
  if (!m.tokenizer_path.empty()) {
    const YAML::Node& at = tn ? *tn : *top->find("checkpoint");
    try {
      m.tokenizer = std::make_shared<const Tokenizer>(Tokenizer::from_file(m.tokenizer_path));
      // Every id the tokenizer gives must be a row of the model's embedding.
      if (m.arch && static_cast<int64_t>(m.tokenizer->vocab_size()) > m.arch->vocab_size())
        ctx.error(at, fmt::format("tokenizer: {} has {} tokens but the model's vocabulary has {}",
                                  m.tokenizer_path.string(), m.tokenizer->vocab_size(), m.arch->vocab_size()));
    } catch (const ConfigError& e) {
      ctx.error(at, fmt::format("tokenizer: {}", e.what()));
    } catch (const InputError& e) {
      ctx.error(at, fmt::format("tokenizer: {}", e.what()));
    }
  }
  // Resources need the architecture (layers, heads, head_dim).
  if (const YAML::Node* n = top->find("resources"); n && m.arch) {
    if (!n->IsSequence()) {
      ctx.error(*n, fmt::format("resources: expected a list of resources, got {}", describe(*n)));
    } else {
      std::map<int64_t, std::string> layer_owner;
      for (size_t i = 0; i < n->size(); ++i) {
        const std::string rpath = fmt::format("resources[{}]", i);
        auto r = read_resource((*n)[i], ctx, rpath, m);
        if (!r) continue;
        for (const auto& other : m.resources)
          if (other.key() == r->key())
            ctx.error((*n)[i]["resource_key"], fmt::format("{}.resource_key: '{}' is declared twice", rpath, r->key()));
        for (int64_t l : r->spec->served_layers())
          if (auto [it, fresh] = layer_owner.emplace(l, r->key()); !fresh)
            ctx.error((*n)[i]["nodes"], fmt::format("{}.nodes: 'attn.{}' already belongs to resource '{}'", rpath, l,
                                                    it->second));
        m.resources.push_back(std::move(*r));
      }
      // Every attention layer must be served: the forward attends at each.
      if (diags.all().size() == errors_before)
        for (int64_t l = 0; l < m.arch->trunk().layers; ++l)
          if (!layer_owner.count(l))
            ctx.error(*n, fmt::format("resources: no resource serves attention layer attn.{} (every layer needs one)", l));
    }
  }
  if (diags.all().size() != errors_before) return std::nullopt;
  return m;
}

}  // namespace mstar

#include "config/deployment.h"

#include <fmt/format.h>

#include "config/yaml_source.h"
#include "core/checked.h"
#include "core/errors.h"
#include "core/files.h"
#include "resources/options.h"

namespace mstar {

SetOverride parse_set(const std::string& arg) {
  const auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError(fmt::format("--set '{}': expected dotted.key=value", arg));
  SetOverride s{arg.substr(0, eq), arg.substr(eq + 1)};
  size_t start = 0;
  while (true) {
    const auto dot = s.key.find('.', start);
    if ((dot == std::string::npos ? s.key.size() : dot) == start)
      throw ConfigError(fmt::format("--set '{}': empty part in key '{}'", arg, s.key));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return s;
}

namespace {

// Grafts each --set value into the tree; the grafted nodes report errors
// under their own text.
bool apply_sets(YAML::Node root, const std::vector<SetOverride>& sets, YamlContext& ctx, Diagnostics& diags) {
  bool ok = true;
  for (const SetOverride& s : sets) {
    auto value = load_yaml_text(s.value.empty() ? "''" : s.value, s.text(), diags);
    if (!value) {
      ok = false;
      continue;
    }
    std::vector<std::string> parts;
    for (size_t start = 0;;) {
      const auto dot = s.key.find('.', start);
      parts.push_back(s.key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    YAML::Node node = root;
    bool placed = true;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      YAML::Node next = node[parts[i]];
      if (!next.IsDefined() || next.IsNull()) {
        node[parts[i]] = YAML::Node(YAML::NodeType::Map);
        next = node[parts[i]];
      }
      if (!next.IsMap()) {
        diags.error(s.text(), 0, 0, fmt::format("'{}' is not a mapping in the file, so it has no key '{}'",
                                                fmt::join(parts.begin(), parts.begin() + static_cast<long>(i) + 1, "."),
                                                parts[i + 1]));
        placed = false;
        break;
      }
      node.reset(next);
    }
    if (!placed) {
      ok = false;
      continue;
    }
    node[parts.back()] = *value;
    for (const auto& kv : node)  // the key too: an unknown key is reported at the key
      if (kv.first.IsScalar() && kv.first.Scalar() == parts.back()) {
        ctx.graft(kv.first, s.text());
        ctx.graft(kv.second, s.text());
      }
  }
  return ok;
}

bool read_backend(const YAML::Node& n, YamlContext& ctx, Backend& out) {
  std::string s;
  if (!read_yaml(n, ctx, "backend", s)) return false;
  try {
    out = parse_backend(s, "backend");
  } catch (const ConfigError& e) {
    const std::string near = did_you_mean(s, {"reference", "cpu", "cuda"});
    ctx.error(n, std::string(e.what()) + (near.empty() ? "" : fmt::format("; did you mean '{}'?", near)));
    return false;
  }
  std::string why;
  if (!backend_available(out, &why)) {
    ctx.error(n, fmt::format("backend: '{}' cannot run here: {}", s, why));
    return false;
  }
  return true;
}

// Sets the one field a deployment may tune (ResourceSpec::pool_field) on a
// copy of the spec, and keeps the copy when it validates.
void patch(SpecRef& spec, const std::string& path, int64_t value, const YAML::Node& at, YamlContext& ctx) {
  std::unique_ptr<ResourceSpec> patched = spec->copy();
  patched->set_pool_size(value);
  try {
    patched->validate(fmt::format("resource '{}'", spec->key()));
    spec = SpecRef(std::move(patched));
  } catch (const ConfigError& err) {
    ctx.error(at, fmt::format("{}: {}", path, err.what()));
  }
}

void apply_overrides(const MapEntries& overrides, YamlContext& ctx, ModelManifest& m) {
  for (const auto& [key, block] : overrides.items) {
    ResourceDecl* decl = nullptr;
    std::vector<std::string> keys;
    for (auto& r : m.resources) {
      keys.push_back(r.key());
      if (r.key() == key) decl = &r;
    }
    if (!decl) {
      const std::string near = did_you_mean(key, keys);
      ctx.error(block, fmt::format("resources.{}: the model declares no resource '{}' (it declares: {}){}", key, key,
                                   keys.empty() ? "none" : fmt::format("{}", fmt::join(keys, ", ")),
                                   near.empty() ? "" : fmt::format("; did you mean '{}'?", near)));
      continue;
    }
    const std::string allowed(decl->spec->pool_field());
    auto e = read_any_map(block, ctx, "resources." + key);
    if (!e) continue;
    for (const auto& [k, v] : e->items) {
      const std::string path = fmt::format("resources.{}.{}", key, k);
      if (k != allowed) {
        ctx.error(v, fmt::format("{}: a deployment may not change '{}': a {} resource accepts only {} (its geometry is "
                                 "a fact of the model's checkpoint)",
                                 path, k, decl->spec->type(), allowed));
        continue;
      }
      int64_t value = 0;
      if (!read_yaml(v, ctx, path, value, Range{1, INT32_MAX - 1})) continue;
      patch(decl->spec, path, value, v, ctx);
    }
  }
}

// What the deployment will hold (every resource's storage, the workload's
// voices as sources, the weights) against what its backend has on this
// machine: a plan that cannot fit is refused here, so mstar-check refuses
// what mstar-run could only end in an out-of-memory kill.
void check_memory(const Deployment& d, const ModelManifest& m, const std::optional<MapEntries>& overrides,
                  const YAML::Node& root, YamlContext& ctx) {
  const auto have = backend_memory_bytes(d.backend);
  if (!have) return;
  const auto add = [](uint64_t& a, uint64_t b) {
    if (__builtin_add_overflow(a, b, &a)) a = UINT64_MAX;
  };
  uint64_t total = m.weights_bytes;
  std::string parts, largest_key;
  uint64_t largest = 0;
  const std::vector<int64_t> voices = voice_lengths(d);
  for (const ResourceDecl& r : m.resources) {
    const uint64_t bytes = r.spec->bytes(voices);
    const std::string knob = fmt::format("{} {}", r.spec->pool_field(), r.spec->pool_size());
    add(total, bytes);
    parts += fmt::format("resource '{}' {} ({}), ", r.key(), bytes_text(bytes), knob);
    if (bytes > largest) largest = bytes, largest_key = r.key();
  }
  if (total <= *have) return;
  const YAML::Node* at = overrides ? overrides->find(largest_key) : nullptr;
  ctx.error(at ? *at : root, fmt::format("memory: the deployment needs {} ({}weights {}); the {} backend has {} on "
                                         "this machine",
                                         bytes_text(total), parts, bytes_text(m.weights_bytes), to_string(d.backend),
                                         bytes_text(*have)));
}

}  // namespace

std::vector<int64_t> voice_lengths(const Deployment& d) {
  std::vector<int64_t> out;
  if (d.workload.contains("voices"))
    for (const auto& [name, tokens] : d.workload["voices"].items()) out.push_back(static_cast<int64_t>(tokens.size()));
  return out;
}

ModelOptions model_options(const Deployment& d) {
  return ModelOptions{d.backend, static_cast<int>(d.threads), d.activations};
}

std::optional<ResolvedDeployment> resolve_deployment(const std::filesystem::path& path,
                                                     const std::vector<SetOverride>& sets, Diagnostics& diags,
                                                     const WorkloadReader& workload) {
  const size_t before = diags.all().size();
  const std::string label = path.string();
  auto root = load_yaml_file(path, label, diags);
  if (!root) return std::nullopt;
  YamlContext ctx(label, diags);
  // Another kind of file passed where a deployment goes: one sentence saying
  // which, not an "unknown key" for each of its keys.
  const YAML::Node& doc = *root;  // const: a lookup of a missing key adds nothing
  if (doc.IsMap() && !doc["model"] && !doc["backend"]) {
    if (doc["kind"] && (doc["architecture"] || doc["checkpoint"] || doc["resources"])) {
      ctx.error(doc, fmt::format("this is a model manifest (it has 'kind' {}), not a deployment: pass a deployment "
                                 "that names it, such as\n  model: {}\n  backend: cpu",
                                 doc["kind"].IsScalar() ? doc["kind"].Scalar() : "?", path.filename().string()));
      return std::nullopt;
    }
    if (doc["model_type"] || doc["architectures"]) {
      ctx.error(doc, "this is a Hugging Face config.json, not a deployment: a model manifest names its folder "
                     "(kind: llama or qwen2, checkpoint: FOLDER; models/hf-demo.yaml), and a deployment names the "
                     "manifest (configs/hf-demo.yaml)");
      return std::nullopt;
    }
  }
  if (root->IsMap() && !apply_sets(*root, sets, ctx, diags)) return std::nullopt;
  auto top = read_map(*root, ctx, "config", {"model", "backend", "kv_dtype", "activations", "threads", "resources", "scheduler",
                                                      "workload"});
  if (!top) return std::nullopt;
  Deployment d;
  d.path = path;
  for (const char* key : {"model", "backend"})
    if (!top->find(key)) ctx.error(*root, fmt::format("config: missing required key '{}'", key));
  if (const YAML::Node* n = top->find("model")) read_yaml(*n, ctx, "model", d.model);
  if (const YAML::Node* n = top->find("backend")) read_backend(*n, ctx, d.backend);
  if (const YAML::Node* n = top->find("kv_dtype")) {
    DType t{};
    if (read_yaml(*n, ctx, "kv_dtype", t)) d.kv_dtype = t;
  }
  if (const YAML::Node* n = top->find("activations")) {
    DType t{};
    if (read_yaml(*n, ctx, "activations", t)) {
      if (t != DType::f32 && t != DType::bf16 && t != DType::q8_0)
        ctx.error(*n, fmt::format("activations: {} is not offered (f32, bf16 or q8_0)", to_string(t)));
      else if (t != DType::f32 && d.backend == Backend::cuda)
        ctx.error(*n, fmt::format("activations: {} runs on the cpu and reference backends, not on cuda", to_string(t)));
      else
        d.activations = t;
    }
  }
  if (const YAML::Node* n = top->find("threads")) read_yaml(*n, ctx, "threads", d.threads, Range{1, 1024});
  if (const YAML::Node* n = top->find("scheduler")) read_yaml_fields(*n, ctx, "scheduler", d.scheduler, FieldMode::standalone);
  std::optional<MapEntries> overrides;
  if (const YAML::Node* n = top->find("resources")) overrides = read_any_map(*n, ctx, "resources");

  if (d.model.empty()) return std::nullopt;
  const std::filesystem::path model_path = path.parent_path() / d.model;
  auto model = load_manifest(model_path, model_path.lexically_normal().string(), diags);
  if (!model) {
    ctx.error(*top->find("model"), fmt::format("model: '{}' is not a valid model manifest (see above)", d.model));
    return std::nullopt;
  }
  if (overrides) apply_overrides(*overrides, ctx, *model);
  // A request of a bounded resource owns rows_per_request rows of every
  // step; a batch smaller than that could never admit one.
  for (const ResourceDecl& r : model->resources)
    if (r.spec->rows_per_request() > d.scheduler.max_batch) {
      const YAML::Node* sched = top->find("scheduler");
      YAML::Node at = *root;
      if (sched) at.reset(sched->IsMap() && (*sched)["max_batch"] ? (*sched)["max_batch"] : *sched);
      ctx.error(at,
                fmt::format("scheduler.max_batch: {} rows per step cannot hold one request of resource '{}', which "
                            "owns rows_per_request = {} rows",
                            d.scheduler.max_batch, r.key(), r.spec->rows_per_request()));
    }
  if (const YAML::Node* n = top->find("workload")) {
    if (!workload) {
      ctx.error(*n, "workload: this program runs no workload");
    } else if (auto w = workload(*n, ctx, *model, path.parent_path())) {
      d.workload = std::move(*w);
    }
  }
  if (d.kv_dtype)
    for (auto& r : model->resources) {
      std::unique_ptr<ResourceSpec> spec = r.spec->copy();
      spec->set_dtype(*d.kv_dtype);
      try {
        spec->validate(fmt::format("resource '{}'", spec->key()));
        r.spec = SpecRef(std::move(spec));
      } catch (const ConfigError& e) {
        ctx.error(*top->find("kv_dtype"), fmt::format("kv_dtype: {}", e.what()));
      }
    }
  if (diags.all().size() == before) check_memory(d, *model, overrides, *root, ctx);
  if (diags.all().size() != before) return std::nullopt;
  return ResolvedDeployment{d, std::move(*model)};
}

}  // namespace mstar

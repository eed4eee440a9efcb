#include "core/json_text.h"
#include "config/memory_plan.h"

#include <fmt/format.h>

#include "config/resource_types.h"
#include "core/json_fields.h"

namespace mstar {

using nlohmann::json;

std::string plan_bytes(uint64_t b) {
  if (b >= (1ull << 30)) return fmt::format("{} ({:.2f} GiB)", b, static_cast<double>(b) / (1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{} ({:.2f} MiB)", b, static_cast<double>(b) / (1ull << 20));
  if (b >= (1ull << 10)) return fmt::format("{} ({:.1f} KiB)", b, static_cast<double>(b) / (1ull << 10));
  return fmt::format("{}", b);
}

namespace {

// What the workload holds, not its contents: voices by length, the request count, the settings.
json workload_json(const json& w) {
  json voices = json::object();
  if (w.contains("voices"))
    for (const auto& [name, tokens] : w["voices"].items()) voices[name] = tokens.size();
  json out{{"requests", w.contains("requests") ? w["requests"]["count"].get<int64_t>() : 0}, {"voices", voices}};
  if (w.contains("settings")) out.update(w["settings"]);
  return out;
}

}  // namespace

json memory_plan_json(const ResolvedDeployment& r) {
  const ModelManifest& m = r.model;
  const Deployment& d = r.deployment;
  const std::size_t wbytes = m.weights_bytes;
  json weights{{"bytes", wbytes}, {"tensors", m.arch->tensors().size()}};
  // The plan reads the files' headers only: every value is read, and a NaN
  // or an infinity refused, when mstar-run loads them.
  if (!m.weight_files().empty()) weights["values"] = "checked when loaded";
  if (!m.checkpoint.empty()) {
    weights["checkpoint"] = m.checkpoint.lexically_normal().string();
    weights["dtype"] = "as stored";
  } else {
    weights["dtype"] = std::string(to_string(m.weights.dtype));
    if (m.weights.dummy_seed) weights["dummy_seed"] = *m.weights.dummy_seed;
    else weights["file"] = m.weights.file;
  }
  const std::vector<int64_t> voices = voice_lengths(d);
  json resources = json::array();
  std::size_t kv = 0;
  for (const auto& res : m.resources) {
    json j = res.spec->plan_json(voices);
    kv += j["total_bytes"].get<std::size_t>();
    resources.push_back(std::move(j));
  }
  json model{{"path", m.path.lexically_normal().string()},
             {"name", m.name},
             {"kind", m.family->name},
             {"architecture", m.arch->to_json()},
             {"weights", weights}};
  if (m.tokenizer) {
    const Tokenizer& t = *m.tokenizer;
    json tk{{"path", m.tokenizer_path.lexically_normal().string()},
            {"vocab_size", t.vocab_size()},
            {"special_tokens", t.special_tokens().size()},
            {"adds_bos", t.adds_bos()}};
    tk["bos"] = t.bos_id() ? json(*t.bos_id()) : json(nullptr);
    tk["eos"] = t.eos_id() ? json(*t.eos_id()) : json(nullptr);
    // Ids the model can draw that the tokenizer cannot spell decode to nothing.
    const int64_t model_vocab = m.arch->vocab_size(), spelled = static_cast<int64_t>(t.vocab_size());
    tk["unspellable_ids"] = model_vocab > spelled ? model_vocab - spelled : 0;
    model["tokenizer"] = tk;
  }
  return json{{"config", d.path.string()},
              {"model", model},
              {"deployment", json{{"backend", std::string(to_string(d.backend))},
                                  {"threads", d.threads},
                                  {"kv_dtype", d.kv_dtype ? json(std::string(to_string(*d.kv_dtype))) : json(nullptr)},
                                  {"activations", std::string(to_string(d.activations))},
                                  {"scheduler", config_to_json(d.scheduler)},
                                  {"workload", workload_json(d.workload)}}},
              {"resources", resources},
              {"totals", json{{"kv_bytes", kv}, {"weights_bytes", wbytes}, {"total_bytes", kv + wbytes}}}};
}

std::string memory_plan_text(const json& p) {
  std::string o;
  const json& m = p["model"];
  const json& d = p["deployment"];
  o += fmt::format("config      {}\n", p["config"].get<std::string>());
  o += fmt::format("model       {} ({}, kind {})\n", m["path"].get<std::string>(), m["name"].get<std::string>(),
                   m["kind"].get<std::string>());
  std::string arch;
  for (const auto& [k, v] : m["architecture"].items()) arch += fmt::format("{}{} {}", arch.empty() ? "" : ", ", k, dump_json(v));
  o += fmt::format("            {}\n", arch);
  if (m.contains("tokenizer")) {
    const json& t = m["tokenizer"];
    o += fmt::format("tokenizer   {}: {} tokens, {} special; bos {}{}, eos {}\n", t["path"].get<std::string>(),
                     t["vocab_size"].get<int64_t>(), t["special_tokens"].get<int64_t>(),
                     t["bos"].is_null() ? "none" : dump_json(t["bos"]), t["adds_bos"].get<bool>() ? " (added)" : "",
                     t["eos"].is_null() ? "none" : dump_json(t["eos"]));
    if (const auto gap = t["unspellable_ids"].get<int64_t>(); gap > 0)
      o += fmt::format("            the model's vocabulary has {} ids more than the tokenizer ({} to {}): they decode "
                       "to nothing\n",
                       gap, t["vocab_size"].get<int64_t>(), t["vocab_size"].get<int64_t>() + gap - 1);
  }
  o += fmt::format("deployment  backend {}, threads {}, kv_dtype {}, activations {}, max_batch {}\n",
                   d["backend"].get<std::string>(), d["threads"].get<int64_t>(),
                   d["kv_dtype"].is_null() ? "as declared" : d["kv_dtype"].get<std::string>(),
                   d["activations"].get<std::string>(), d["scheduler"]["max_batch"].get<int64_t>());
  const json& wl = d["workload"];
  std::string voices;
  for (const auto& [name, len] : wl["voices"].items())
    voices += fmt::format("{}{} ({} tokens)", voices.empty() ? "" : ", ", name, len.get<int64_t>());
  o += fmt::format("workload    {} requests{}\n", wl["requests"].get<int64_t>(),
                   voices.empty() ? "" : "; voices " + voices);
  for (const json& r : p["resources"]) {
    const json& c = r["config"];
    o += fmt::format("\nresource    {} ({}, {} layers, {})\n", r["resource_key"].get<std::string>(),
                     r["type"].get<std::string>(), r["layers"].get<int64_t>(), c["dtype"].get<std::string>());
    if (const ResourceType* type = find_resource_type(r["type"].get<std::string>()); type && type->plan_text)
      o += type->plan_text(r);
    else
      o += fmt::format("  bytes     {}\n", plan_bytes(r["total_bytes"].get<uint64_t>()));
  }
  const json& w = m["weights"];
  o += fmt::format("\nweights     {} tensors, {}, {} = {}\n", w["tensors"].get<int64_t>(), w["dtype"].get<std::string>(),
                   w.contains("checkpoint") ? "checkpoint " + w["checkpoint"].get<std::string>()
                   : w.contains("file")     ? "file " + w["file"].get<std::string>()
                                            : fmt::format("dummy seed {}", w["dummy_seed"].get<int64_t>()),
                   plan_bytes(w["bytes"].get<uint64_t>()));
  if (w.contains("values"))
    o += "            values: checked when mstar-run loads them (a NaN or an infinity is refused then; this plan "
         "reads the files' headers)\n";
  const json& t = p["totals"];
  o += fmt::format("total       KV {} + weights {} = {}\n", plan_bytes(t["kv_bytes"].get<uint64_t>()),
                   plan_bytes(t["weights_bytes"].get<uint64_t>()), plan_bytes(t["total_bytes"].get<uint64_t>()));
  return o;
}

}  // namespace mstar

#include "models/families/hf_decoder.h"

#include <cmath>
#include <fstream>
#include <numbers>
#include <set>

#include <fmt/format.h>

#include "core/files.h"
#include "core/gguf.h"
#include "core/json_text.h"
#include "core/errors.h"
#include "models/decoder_lm.h"
#include "models/families/gguf_decoder.h"
#include "models/safetensors.h"

namespace mstar {

namespace {

using nlohmann::json;

TrunkNames hf_names(int64_t l, bool bias) {
  const std::string p = fmt::format("model.layers.{}.", l);
  TrunkNames n{p + "input_layernorm.weight",
               p + "self_attn.q_proj.weight",
               p + "self_attn.k_proj.weight",
               p + "self_attn.v_proj.weight",
               p + "self_attn.o_proj.weight",
               p + "post_attention_layernorm.weight",
               p + "mlp.gate_proj.weight",
               p + "mlp.up_proj.weight",
               p + "mlp.down_proj.weight",
               "",
               "",
               "",
               "",
               ""};
  if (bias) {
    n.q_bias = p + "self_attn.q_proj.bias";
    n.k_bias = p + "self_attn.k_proj.bias";
    n.v_bias = p + "self_attn.v_proj.bias";
  }
  return n;
}

// config.json is small; anything bigger is not one.
constexpr std::size_t kMaxConfigBytes = 1 << 20;

// Reads a JSON object from `path`; problems go to `error`. A config nests a
// few levels; deeper input is refused before it is built.
std::optional<json> read_object(const std::filesystem::path& path, const std::function<void(const std::string&)>& error) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    error(fmt::format("{}: missing (a Hugging Face checkpoint folder holds config.json)", path.string()));
    return std::nullopt;
  }
  json j;
  try {
    j = parse_json(read_regular_file(path, kMaxConfigBytes, path.string()), path.string(), 16);
  } catch (const InputError& e) {
    error(e.what());
    return std::nullopt;
  }
  if (!j.is_object()) {
    error(fmt::format("{}: expected a JSON object", path.string()));
    return std::nullopt;
  }
  return j;
}

// Typed reads of config.json keys, each problem reported with file, key and value.
class ConfigReader {
 public:
  ConfigReader(const json& j, std::string file, const std::function<void(const std::string&)>& error)
      : j_(j), file_(std::move(file)), error_(error) {}
  bool ok() const { return ok_; }
  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
  void fail(const char* key, const std::string& why) {
    error_(fmt::format("{}: {}: {}", file_, key, why));
    ok_ = false;
  }
  int64_t integer(const char* key, int64_t lo, int64_t hi, std::optional<int64_t> dflt = std::nullopt) {
    if (!has(key)) {
      if (!dflt) fail(key, "missing");
      return dflt.value_or(lo);
    }
    const json& v = j_[key];
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) ||
        v.get<int64_t>() < lo || v.get<int64_t>() > hi) {
      fail(key, fmt::format("expected an integer in [{}, {}], got {}", lo, hi, json_excerpt(v)));
      return lo;
    }
    return v.get<int64_t>();
  }
  double real(const char* key, double lo, double hi, std::optional<double> dflt = std::nullopt) {
    if (!has(key)) {
      if (!dflt) fail(key, "missing");
      return dflt.value_or(lo);
    }
    const json& v = j_[key];
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo || v.get<double>() > hi) {
      fail(key, fmt::format("expected a number in [{}, {}], got {}", lo, hi, json_excerpt(v)));
      return lo;
    }
    return v.get<double>();
  }
  bool boolean(const char* key, bool dflt) {
    if (!has(key)) return dflt;
    if (!j_[key].is_boolean()) {
      fail(key, fmt::format("expected true or false, got {}", json_excerpt(j_[key])));
      return dflt;
    }
    return j_[key].get<bool>();
  }
  std::string string(const char* key, const std::string& dflt) {
    if (!has(key)) return dflt;
    if (!j_[key].is_string()) {
      fail(key, fmt::format("expected a string, got {}", json_excerpt(j_[key])));
      return dflt;
    }
    return j_[key].get<std::string>();
  }
  // An id or a list of ids, each in [0, vocab).
  std::vector<int32_t> ids(const char* key, int64_t vocab) {
    std::vector<int32_t> out;
    if (!has(key)) return out;
    const json& v = j_[key];
    const json list = v.is_array() ? v : json::array({v});
    for (const json& x : list) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= vocab) {
        fail(key, fmt::format("expected token ids in [0, {}), got {}", vocab, json_excerpt(v)));
        return {};
      }
      out.push_back(x.get<int32_t>());
    }
    return out;
  }
  const json& at(const char* key) const { return j_[key]; }

 private:
  const json& j_;
  std::string file_;
  const std::function<void(const std::string&)>& error_;
  bool ok_ = true;
};

RopeScaling read_rope_scaling(ConfigReader& r, const json& j, const std::string& file,
                              const std::function<void(const std::string&)>& error, bool& ok) {
  RopeScaling s;
  if (!r.has("rope_scaling")) return s;
  const json& rs = j["rope_scaling"];
  if (!rs.is_object()) {
    r.fail("rope_scaling", fmt::format("expected an object or null, got {}", json_excerpt(rs)));
    return s;
  }
  const std::string type = rs.contains("rope_type") ? rs["rope_type"].is_string() ? rs["rope_type"].get<std::string>() : ""
                           : rs.contains("type")    ? rs["type"].is_string() ? rs["type"].get<std::string>() : ""
                                                    : "";
  if (type != "default" && type != "linear" && type != "llama3") {
    r.fail("rope_scaling", fmt::format("rope type {} is not supported (mstar runs default, linear and llama3 rotary "
                                       "scaling)",
                                       rs.contains("rope_type") ? json_excerpt(rs["rope_type"]) : json_excerpt(rs.value("type", json()))));
    return s;
  }
  s.type = type;
  ConfigReader sub(rs, file + ": rope_scaling", error);
  if (type != "default") s.factor = sub.real("factor", 1e-6, 1e6);
  if (type == "llama3") {
    s.low_freq_factor = sub.real("low_freq_factor", 1e-6, 1e6);
    s.high_freq_factor = sub.real("high_freq_factor", 1e-6, 1e6);
    s.original_max_position_embeddings = static_cast<double>(sub.integer("original_max_position_embeddings", 1, INT32_MAX));
    if (sub.ok() && s.high_freq_factor <= s.low_freq_factor)
      sub.fail("high_freq_factor", fmt::format("{} must exceed low_freq_factor {}", s.high_freq_factor, s.low_freq_factor));
  }
  ok = ok && sub.ok();
  return s;
}

std::unique_ptr<Architecture> read_architecture_of(const HfDecoderKind& kind, ArchitectureInput& in) {
  MSTAR_ASSERT(!in.checkpoint.empty(), "a checkpoint family is read from its folder or GGUF file");
  std::error_code ec;
  if (std::filesystem::is_regular_file(in.checkpoint, ec) && is_gguf(in.checkpoint))
    return read_gguf_architecture(kind, in.checkpoint, in.positions, in.error);
  return read_hf_architecture(kind, in.checkpoint, in.positions, in.error);
}

std::unique_ptr<Model> make_decoder(const Architecture& a, const Weights& w, const ModelOptions& o) {
  const auto& h = dynamic_cast<const HfArchitecture&>(a);
  DecoderSpec spec;
  spec.shape = h.shape;
  const bool bias = h.shape.qkv_bias;
  spec.names = [bias](int64_t l) { return hf_names(l, bias); };
  spec.final_norm = "model.norm.weight";
  spec.embed = "model.embed_tokens.weight";
  spec.head = h.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
  // Matrices are read as stored (bf16 checkpoints stay bf16); activations are f32.
  spec.matrix_dtype = std::nullopt;
  for (double f : h.inv_freq()) spec.inv_freq.push_back(static_cast<float>(f));
  spec.positions = h.positions == "cache" ? PositionMode::cache : PositionMode::stream;
  spec.vocab = h.vocab;
  spec.end_tokens = h.eos;
  return std::make_unique<DecoderLM>(a, std::move(spec), w, o);
}

}  // namespace

ModelFamily hf_family(const HfDecoderKind& kind) {
  const std::string& name = kind.model_type;
  ModelFamily f;
  f.name = name;
  f.task = "speech";
  f.resource_type = "bounded_kv";
  f.summary = fmt::format("a Hugging Face {} decoder (architecture from the checkpoint's config.json)", name);
  f.from_checkpoint = true;
  f.read_architecture = [kind](ArchitectureInput& in) { return read_architecture_of(kind, in); };
  f.weight_files = hf_weight_files;
  f.make = make_decoder;
  return f;
}

std::vector<TensorSpec> HfArchitecture::tensors() const {
  const TrunkShape& s = shape;
  std::vector<TensorSpec> t;
  t.push_back({"model.embed_tokens.weight", {vocab, s.width}, true});
  for (int64_t l = 0; l < s.layers; ++l) {
    const TrunkNames n = hf_names(l, s.qkv_bias);
    t.push_back({n.attn_norm, {s.width}});
    t.push_back({n.q, {s.heads * s.head_dim, s.width}, true});
    t.push_back({n.k, {s.kv_heads * s.head_dim, s.width}, true});
    t.push_back({n.v, {s.kv_heads * s.head_dim, s.width}, true});
    if (s.qkv_bias) {
      t.push_back({n.q_bias, {s.heads * s.head_dim}});
      t.push_back({n.k_bias, {s.kv_heads * s.head_dim}});
      t.push_back({n.v_bias, {s.kv_heads * s.head_dim}});
    }
    t.push_back({n.o, {s.width, s.heads * s.head_dim}, true});
    t.push_back({n.mlp_norm, {s.width}});
    t.push_back({n.gate, {s.mlp_width, s.width}, true});
    t.push_back({n.up, {s.mlp_width, s.width}, true});
    t.push_back({n.down, {s.width, s.mlp_width}, true});
  }
  t.push_back({"model.norm.weight", {s.width}});
  if (!tie_word_embeddings) t.push_back({"lm_head.weight", {vocab, s.width}, true});
  return t;
}

nlohmann::json HfArchitecture::to_json() const {
  json j{{"model_type", model_type},
         {"checkpoint", checkpoint.lexically_normal().string()},
         {"hidden_size", shape.width},
         {"intermediate_size", shape.mlp_width},
         {"num_hidden_layers", shape.layers},
         {"num_attention_heads", shape.heads},
         {"num_key_value_heads", shape.kv_heads},
         {"head_dim", shape.head_dim},
         {"rms_norm_eps", shape.norm_eps},
         {"rope_theta", rope_theta},
         {"rope_scaling", rope_freq_divisors.empty() ? rope_scaling.type : "rope_freqs"},
         {"tie_word_embeddings", tie_word_embeddings},
         {"vocab_size", vocab},
         {"eos_token_id", eos},
         {"positions", positions}};
  if (bos) j["bos_token_id"] = *bos;
  return j;
}

std::vector<double> HfArchitecture::inv_freq() const {
  const int64_t half = shape.head_dim / 2;
  std::vector<double> f(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i)
    f[static_cast<size_t>(i)] = std::pow(rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(shape.head_dim));
  const RopeScaling& s = rope_scaling;
  if (!rope_freq_divisors.empty()) {
    for (std::size_t i = 0; i < f.size(); ++i) f[i] /= rope_freq_divisors[i];
    return f;
  }
  if (s.type == "linear")
    for (double& x : f) x /= s.factor;
  if (s.type == "llama3") {
    const double old = s.original_max_position_embeddings;
    const double low_wavelen = old / s.low_freq_factor, high_wavelen = old / s.high_freq_factor;
    for (double& x : f) {
      const double wavelen = 2 * std::numbers::pi / x;
      if (wavelen < high_wavelen) continue;
      if (wavelen > low_wavelen) {
        x /= s.factor;
        continue;
      }
      const double smooth = (old / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      x = (1 - smooth) * x / s.factor + smooth * x;
    }
  }
  return f;
}

std::unique_ptr<HfArchitecture> read_hf_architecture(const HfDecoderKind& kind, const std::filesystem::path& folder,
                                                     const std::string& positions,
                                                     const std::function<void(const std::string&)>& error) {
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec)) {
    error(fmt::format("{}: neither a folder (a Hugging Face checkpoint is a folder with config.json) nor a GGUF file",
                      folder.string()));
    return nullptr;
  }
  const std::filesystem::path config_path = folder / "config.json";
  const std::string file = config_path.string();
  const std::optional<json> j = read_object(config_path, error);
  if (!j) return nullptr;
  ConfigReader r(*j, file, error);
  auto a = std::make_unique<HfArchitecture>();
  a->checkpoint = folder;
  a->positions = positions;
  a->model_type = r.string("model_type", "");
  const ModelFamily* named = find_family(a->model_type);
  if (!named || !named->from_checkpoint) {
    std::vector<std::string> runs;
    for (const std::string& n : family_names())
      if (find_family(n)->from_checkpoint) runs.push_back(n);
    r.fail("model_type", fmt::format("'{}' is not supported (mstar runs {})", a->model_type, fmt::join(runs, " and ")));
    return nullptr;
  }
  if (a->model_type != kind.model_type) {
    r.fail("model_type", fmt::format("'{}', but the manifest says kind {}", a->model_type, kind.model_type));
    return nullptr;
  }
  TrunkShape& s = a->shape;
  s.width = r.integer("hidden_size", 1, 1 << 16);
  s.mlp_width = r.integer("intermediate_size", 1, 1 << 20);
  s.layers = r.integer("num_hidden_layers", 1, 1024);
  s.heads = r.integer("num_attention_heads", 1, 1024);
  s.kv_heads = r.integer("num_key_value_heads", 1, 1024, s.heads);
  if (!r.ok()) return nullptr;
  if (s.heads % s.kv_heads != 0) r.fail("num_key_value_heads", fmt::format("{} must divide num_attention_heads {}", s.kv_heads, s.heads));
  s.head_dim = r.integer("head_dim", 1, 1024, s.width / s.heads);
  if (r.ok() && !r.has("head_dim") && s.width % s.heads != 0)
    r.fail("hidden_size", fmt::format("{} is not a multiple of num_attention_heads {} and no head_dim is given", s.width,
                                      s.heads));
  if (r.ok() && s.head_dim % 2 != 0) r.fail("head_dim", fmt::format("{} must be even for rotary positions", s.head_dim));
  s.norm_eps = r.real("rms_norm_eps", 1e-12, 1.0);
  s.qkv_bias = kind.qkv_bias;
  a->vocab = r.integer("vocab_size", 2, 1 << 24);
  a->rope_theta = r.real("rope_theta", 1.0, 1e12, 10000.0);
  a->context_length = r.integer("max_position_embeddings", 1, INT32_MAX, 4096);
  a->tie_word_embeddings = r.boolean("tie_word_embeddings", false);
  const std::string act = r.string("hidden_act", "silu");
  if (act != "silu") r.fail("hidden_act", fmt::format("'{}' is not supported (the MLP is SwiGLU: silu)", act));
  for (const std::string& flag : kind.refused_flags)
    if (r.boolean(flag.c_str(), false))
      r.fail(flag.c_str(), fmt::format("true is not supported ({} without biases)", kind.model_type));
  if (r.boolean("use_sliding_window", false))
    r.fail("use_sliding_window", "true is not supported (mstar's bounded cache decides what a step sees)");
  bool ok = r.ok();
  a->rope_scaling = read_rope_scaling(r, *j, file, error, ok);
  if (!r.ok() || !ok) return nullptr;
  if (r.has("bos_token_id")) {
    const auto b = r.ids("bos_token_id", a->vocab);
    if (!b.empty()) a->bos = b[0];
  }
  a->eos = r.ids("eos_token_id", a->vocab);
  // generation_config.json, when present, decides the end tokens.
  const std::filesystem::path gen = folder / "generation_config.json";
  if (std::filesystem::exists(gen, ec)) {
    const std::optional<json> g = read_object(gen, error);
    if (!g) return nullptr;
    ConfigReader gr(*g, gen.string(), error);
    if (gr.has("eos_token_id")) a->eos = gr.ids("eos_token_id", a->vocab);
    if (!gr.ok()) return nullptr;
  }
  if (!r.ok()) return nullptr;
  return a;
}

std::vector<std::filesystem::path> hf_weight_files(const std::filesystem::path& folder) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(folder, ec) && is_gguf(folder)) return {folder};
  const auto index = folder / "model.safetensors.index.json";
  if (std::filesystem::exists(index, ec)) return weight_files(index);
  const auto single = folder / "model.safetensors";
  if (std::filesystem::is_regular_file(single, ec)) return {single};
  if (std::filesystem::exists(single, ec))
    throw InputError(fmt::format("{}: is not a regular file (a directory, device, socket or pipe?)", single.string()));
  throw InputError(fmt::format("{}: no model.safetensors or model.safetensors.index.json", folder.string()));
}

}  // namespace mstar

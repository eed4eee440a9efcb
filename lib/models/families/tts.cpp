#include "models/families/tts.h"

#include <fmt/format.h>

#include "core/errors.h"
#include "kernels/rope.h"

namespace mstar {

namespace {

std::unique_ptr<Architecture> read_tts(ArchitectureInput& in) {
  MSTAR_ASSERT(in.fields, "the manifest reader hands an architecture block to a family that states one");
  FieldSource& src = *in.fields;
  CommonArchitecture c;
  TtsFields t;
  const bool common_ok = read_common_architecture(src, c);
  bool ok = read_declared(src, t) && common_ok;
  if (!ok) return nullptr;
  if (c.head_dim % 2 != 0) {
    src.error("head_dim", fmt::format("{} {} must be even for rotary positions", src.path("head_dim"), c.head_dim));
    ok = false;
  }
  if (c.heads * c.head_dim != c.width) {
    src.error("head_dim", fmt::format("{}: heads {} x head_dim {} = {} must equal width {} for a tts model", src.where(),
                                      c.heads, c.head_dim, c.heads * c.head_dim, c.width));
    ok = false;
  }
  if (t.end_token >= t.vocab_size) {
    src.error("end_token",
              fmt::format("{} {} must be below vocab_size {}", src.path("end_token"), t.end_token, t.vocab_size));
    ok = false;
  }
  if (!ok) return nullptr;
  return std::make_unique<TtsArchitecture>(c, t);
}

}  // namespace

std::vector<TensorSpec> TtsArchitecture::tensors() const {
  const auto& c = common;
  std::vector<TensorSpec> t;
  t.push_back({"embed.weight", {tts.vocab_size, c.width}});
  append_trunk_tensors(c, t);
  t.push_back({"head.weight", {tts.vocab_size, c.width}});
  return t;
}

nlohmann::json TtsArchitecture::to_json() const {
  nlohmann::json j = common_json(common);
  for_each_field<TtsFields>([&](const auto& d) { j[std::string(d.name)] = tts.*(d.member); });
  return j;
}

ModelFamily tts_family() {
  ModelFamily f;
  f.name = "tts";
  f.task = "speech";
  f.resource_type = "bounded_kv";
  f.summary = "mstar's small voice-prompt speech decoder (architecture stated in the manifest)";
  f.read_architecture = read_tts;
  f.make = [](const Architecture& a, const Weights& w, const ModelOptions& o) -> std::unique_ptr<Model> {
    const auto& t = dynamic_cast<const TtsArchitecture&>(a);
    DecoderSpec spec;
    spec.shape = t.trunk();
    spec.names = inhouse_names;
    spec.final_norm = "final_norm.weight";
    spec.embed = "embed.weight";
    spec.head = "head.weight";
    spec.matrix_dtype = DType::f32;  // the in-house families compute with f32 matrices, whatever their file stores
    spec.inv_freq = rope_inv_freq(static_cast<int32_t>(t.common.head_dim), static_cast<double>(t.common.rope_theta));
    spec.positions = t.common.positions == "cache" ? PositionMode::cache : PositionMode::stream;
    spec.vocab = t.tts.vocab_size;
    spec.end_tokens = {static_cast<int32_t>(t.tts.end_token)};
    return std::make_unique<DecoderLM>(a, std::move(spec), w, o);
  };
  return f;
}

}  // namespace mstar
